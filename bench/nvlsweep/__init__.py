"""nvlsweep: bench/sweep's package (bench/sweep runs nvlsweep.main.main).

Modules by responsibility; each imports only modules listed below it:
  main          the command line: which grid to run, Ctrl-C
  models        the `nvlemu run` grid end to end
  serve         the `nvlemu serve` grid end to end: SLO, Pareto front
  collectives   the *_perf benches' grid end to end: busbw vs size
  summary       summary.md of a run grid
  serve_report  summary.md of a serve grid
  serve_grid    serve grids: layouts, load points, run ids, commands
  grid          run grids: axes, run ids (stable across versions), commands
  plots         gnuplot: PNG and SVG, with their .gp and data files
  runs          running and resuming jobs, the progress line
  families      the members nvlemu lists (`nvlemu --list --json`)
  options       argument parsing
  outputs       flat rows, results.csv/.json, number formats, Markdown
  launch        the repository, the binaries, one job under a time limit
Python 3 standard library only.  tests/sweep holds its tests."""
