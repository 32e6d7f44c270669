package pollux

// Published is the authors' average JCT in seconds per workload (workload-1 …
// workload-8) from the Pollux artifact's results-jobload/<policy>-<load>/
// summary.json ("avgs"), petuum/adaptdl branch osdi21-artifact, commit
// de25dcc90c350b8ade3a710e437a651a8d2efae6, simulator/ (Apache-2.0).
var Published = map[[2]string][8]float64{
	{"tiresias", "1.0"}: {2473.65, 5144.9625, 3876.25625, 3280.2625, 3501.0125, 3469.69375, 5479.9125, 5079.70625},
	{"optimus", "1.0"}:  {4087.0625, 6913.875, 3944.00625, 5967.75, 5656.25, 5301.875, 7290.85625, 6293.79375},
	{"pollux", "1.0"}:   {2088.76875, 3322.94375, 2188.49375, 2720.98125, 2673.7, 2446.13125, 3616.14375, 2951.90625},
	{"tiresias", "0.5"}: {1450.9375, 2333.275, 1869.9, 1946.7625, 1425.3875, 1826.575, 3979.15, 1899.95},
	{"optimus", "0.5"}:  {1309.6875, 3124.5625, 1986.8375, 2173.8625, 1324.525, 1957.9625, 5314.0, 1971.475},
	{"pollux", "0.5"}:   {1059.5125, 1826.2625, 1310.525, 1497.7625, 976.8375, 1287.825, 2881.05, 1432.0375},
}
