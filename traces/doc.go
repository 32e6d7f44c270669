// Package traces reads and writes job traces and node lists for gpusim.
//
// It has one native job format (CSV, or Parquet when the file name ends in
// ".parquet") and importers for the public GPU-cluster traces the research
// community uses (Alibaba openb 2023, DLRM 2025, PAI 2020, spot-GPU 2026, Philly,
// Helios) and for exports of common schedulers (Slurm sacct). Every reader streams:
// it holds one row at a time (plus, for job traces, a set of seen job IDs used to
// reject duplicates), so traces of tens of millions of rows can be converted with
// bounded memory.
//
// Contracts:
//
//   - Bad input never panics. The native format is strict: any bad row is an error.
//     Importers of public traces may instead skip a row and count the reason in an
//     ImportReport (ReadOptions.Strict turns those skips into errors).
//   - Errors about a row are *RowError values whose text is
//     "FILE:LINE: column COL: message" (LINE is 1-based and counts the header; for
//     Parquet it is the 1-based row number).
//   - Reading is deterministic: the same file gives the same jobs in the same order.
//     Randomness (resampling in TraceSource) comes only from sim.Stream.
//   - Times are converted with sim.Seconds (microsecond integers); resources are
//     integers (GPUs, milli-GPU, millicores, MiB).
//
// See docs/traces.md for every format and column.
package traces
