# Evidence for docs/fidelity.md: the priority factors Slurm computed (sprio)
# at t = 20, 65 and 130 s, written next to the recording.
(for t in 20 65 130; do
	sleep $((T0 + t - $(date +%s)))
	echo "== t=$t"
	sprio -l
done >"$FIXTURE/sprio.txt" 2>&1 &)
