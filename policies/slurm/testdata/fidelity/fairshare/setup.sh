# Evidence for docs/fidelity.md: the association tree with its usage and
# fair-share factors (sshare) and the pending jobs' priority factors (sprio),
# before and after the decay thread's passes (about 58 and 118 s).
(for t in 30 64 100 124; do
	sleep $((T0 + t - $(date +%s)))
	echo "== t=$t"
	sshare -a -l
	sprio -l
done >"$FIXTURE/sshare.txt" 2>&1 &)
