// Package reports turns a finished simulation (sim.Result) into gpusim's run output
// contract and reads it back.
//
// A run directory (one per policy, written by `gpusim run -o DIR`) holds:
//
//	summary.json        headline metrics, per-class and per-queue statistics, provenance
//	jobs.csv            one row per job (JobRef order)
//	jobs.parquet        the same rows and columns as jobs.csv
//	timeseries.parquet  the sampled cluster state (sim.Sample)
//	events.parquet      the event log, in order
//
// Every file is written atomically (internal/fsutil) and deterministically: equal
// inputs give byte-identical files (except summary.json's wall_seconds and
// events_per_second, which measure the host). docs/outputs.md lists every column and
// field; docs/metrics.md defines every metric.
//
// The package also compares summaries (check gates) and renders plots and reports
// from saved run directories (BuildReport).
package reports
