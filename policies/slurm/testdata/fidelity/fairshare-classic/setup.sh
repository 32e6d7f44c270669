# Evidence for docs/fidelity.md: the association tree with its usage and
# fair-share factors (sshare) and the pending jobs' priority factors (sprio),
# before and after the decay thread's passes (about 57 and 117 s). The loop
# stops when the recording's directory is gone (a failed or finished run).
(for t in 30 64 100 124; do
	d=$((T0 + t - $(date +%s)))
	[ "$d" -gt 0 ] && sleep "$d"
	[ -f "$SLURM_CONF" ] || exit 0
	echo "== t=$t"
	sshare -a -l
	sprio -l
done >"$FIXTURE/sshare.txt" 2>&1 &)
