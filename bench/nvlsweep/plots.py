"""Plots through gnuplot (when installed): PNG and SVG from one .gp file
each, under DIR/plots/ with their data under DIR/plots/data/: tokens/s per
GPU, TPOT and the decode step's breakdown of a run grid; the Pareto front
of a serve grid; busbw vs size of the collectives."""
import os
import re
import shutil
import subprocess
import sys

from .launch import rel_to_repo
from .outputs import fmt_load

PARTS = ["gemm", "attention", "collective", "other", "launch", "wait"]

# ---------------------------------------------------------------- plots

# gnuplot point types, one per series: filled circle, square, triangle,
# diamond, inverted triangle, pentagon
SERIES_POINTS = [7, 5, 9, 13, 11, 15]


def gnuplot_terms():
    try:
        p = subprocess.run(["gnuplot", "-e", "set terminal"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True, timeout=30)
        t = p.stdout
    except (OSError, subprocess.TimeoutExpired):
        return None, None
    png = "pngcairo" if re.search(r"^\s*pngcairo\s", t, re.M) else (
        "png" if re.search(r"^\s*png\s", t, re.M) else None)
    svg = "svg" if re.search(r"^\s*svg\s", t, re.M) else None
    return png, svg


def gp_str(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def render(pdir, name, body, png, svg, width=900, height=560):
    """Writes plots/NAME.gp and renders NAME.png and NAME.svg from it."""
    made = []
    for term, ext in ((png, "png"), (svg, "svg")):
        if not term:
            continue
        font = "font 'sans,11'" if term in ("pngcairo", "svg") else ""
        head = "set terminal %s size %d,%d %s noenhanced\nset output %s\n" % (
            term, width, height, font, gp_str(name + "." + ext))
        gp = os.path.join(pdir, "%s.%s.gp" % (name, ext))
        with open(gp, "w") as f:
            f.write(head + body)
        p = subprocess.run(["gnuplot", os.path.basename(gp)], cwd=pdir,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
        if p.returncode != 0:
            sys.stderr.write("sweep: gnuplot %s failed:\n%s\n" % (gp, p.stdout))
        else:
            made.append(os.path.join(pdir, name + "." + ext))
    return made


def slug(s):
    return re.sub(r"[^A-Za-z0-9]+", "_", s).strip("_") or "all"


def have_gnuplot():
    if not shutil.which("gnuplot"):
        sys.stderr.write("sweep: gnuplot not found: no plots (scripts/install-deps "
                         "installs gnuplot-nox)\n")
        return False
    return True


def models_title(a, ok, varying):
    """The plots' second title line: the model, system and lengths (or
    --title), with the inputs that every run shares."""
    r0 = ok[0]
    what = "%s on %s, %s" % (r0.get("inputs.model"), r0.get("inputs.system"),
                             "context %s" % r0["ctx"] if r0["ctx"] else
                             "prompt %s, %s new tokens" % (r0["prompt_len"], r0["gen_len"]))
    if a.title:
        what = a.title
    fixed = []
    for k in ("batch", "dtype", "what_if"):
        if k not in varying and r0.get(k) not in (None, "baseline"):
            fixed.append(("batch %s" if k == "batch" else "%s") % r0[k])
    if fixed:
        what += " (" + ", ".join(fixed) + ")"
    return what


def write_series(pdir, series):
    """One data file per series, its runs by TP: [(file, label)]."""
    files = []
    for i, (lab, rs) in enumerate(series.items()):
        fn = "data/series%02d_%s.dat" % (i, slug(lab))
        with open(os.path.join(pdir, fn), "w") as f:
            f.write("# %s\n# tp tokens_per_s_per_gpu tpot_ms tokens_per_s_rack ttft_ms\n" % lab)
            for r in sorted(rs, key=lambda r: r["tp"]):
                f.write("%d %.6g %.6g %.6g %.6g\n" % (r["tp"], r["tokens_per_s_per_gpu"],
                                                       r["tpot_ms"], r["tokens_per_s_rack"],
                                                       r["ttft_ms"]))
        files.append((fn, lab))
    return files


def vs_tp_body(files, series, tps, col, ylabel, ttl, what):
    """A quantity vs TP, one line per series (column col of the files)."""
    vals = [v for rs in series.values() for v in
            (r["tokens_per_s_per_gpu"] if col == 2 else r["tpot_ms"] for r in rs)
            if v and v > 0]
    # values over more than a decade: a log axis, so the small series
    # is not flattened against zero
    logy = bool(vals) and max(vals) > 10 * min(vals)
    body = ("set title %s\nset xlabel 'tensor-parallel degree (TP = GPUs per "
            "model copy)'\nset ylabel %s\nset logscale x 2\nset xtics (%s)\n"
            "set xrange [%g:%g]\n%s\nset grid\n"
            "set key outside right top\nplot " % (
                gp_str("%s\n%s" % (ttl, what)), gp_str(ylabel + (" (log scale)"
                                                                  if logy else "")),
                ", ".join('"%d" %d' % (t, t) for t in tps),
                tps[0] / 1.3, tps[-1] * 1.3,
                "set logscale y\nset yrange [%g:%g]" % (min(vals) / 1.6, max(vals) * 1.6)
                if logy else "set yrange [0:%g]" % (max(vals or [1]) * 1.12)))
    # each series its own dash and marker, so overlapping lines stay
    # apart in print and for colour-blind readers
    body += ", \\\n  ".join(
        "%s using 1:%d with linespoints lw 2 dt %d pt %d ps 1.3 title %s" % (
            gp_str(fn), col, 1 + i % 5, SERIES_POINTS[i % len(SERIES_POINTS)],
            gp_str(lab)) for i, (fn, lab) in enumerate(files)) + "\n"
    return body


def bars_body(pdir, name, series, tps, col, ylabel, ttl, what):
    """A quantity of each series at the one TP of the grid, as bars."""
    fn = "data/%s_bars.dat" % name
    with open(os.path.join(pdir, fn), "w") as f:
        f.write("# series value\n")
        for lab, rs in series.items():
            f.write("%s %.6g\n" % (gp_str(lab), rs[0]["tokens_per_s_per_gpu"]
                                   if col == 2 else rs[0]["tpot_ms"]))
    top = max([rs[0]["tokens_per_s_per_gpu"] if col == 2 else rs[0]["tpot_ms"]
               for rs in series.values()] or [1])
    # headroom above the tallest bar for its value label
    body = ("set title %s\nset ylabel %s\nset style data histogram\n"
            "set style fill solid 0.8 border -1\nset boxwidth 0.7\n"
            "set yrange [0:%g]\nset grid ytics\nset xtics rotate by -20\n"
            "set key off\nplot %s using 2:xtic(1) lc rgb '#4477aa', "
            "'' using 0:2:(sprintf('%%.3g', $2)) with labels offset 0,1 notitle\n" % (
                gp_str("%s at TP %d\n%s" % (ttl.replace(" vs TP", ""), tps[0], what)),
                gp_str(ylabel), top * 1.15, gp_str(fn)))
    return body


def breakdown_plot(pdir, series, what, png, svg):
    """Where a decode step's time goes: stacked bars, one per run."""
    fn = "data/breakdown.dat"
    with open(os.path.join(pdir, fn), "w") as f:
        f.write("# run " + " ".join("%s_ms" % p for p in PARTS) + "\n")
        for lab, rs in series.items():
            for r in sorted(rs, key=lambda r: r["tp"]):
                name = "TP %d" % r["tp"] + ("" if lab == "all runs" else ", " + lab)
                f.write("%s %s\n" % (gp_str(name), " ".join(
                    "%.6g" % (r.get("decode_step_breakdown.%s_ms" % p) or 0) for p in PARTS)))
    colors = ["#4477aa", "#66ccee", "#ee6677", "#228833", "#ccbb44", "#bbbbbb"]
    body = ("set title %s\nset ylabel 'ms per decode step (mean over ranks)'\n"
            "set style data histogram\nset style histogram rowstacked\n"
            "set style fill solid 0.85 border -1\nset boxwidth 0.7\nset yrange [0:*]\n"
            "set grid ytics\nset key outside right top title 'part of the step'\n"
            "set xtics rotate by -30\nplot " % gp_str(
                "Where a decode step's time goes, per TP\n" + what))
    body += ", \\\n  ".join(
        "%s using %d%s lc rgb '%s' title %s" % (
            gp_str(fn) if i == 0 else "''", i + 2, ":xtic(1)" if i == 0 else "",
            colors[i], gp_str(p if p not in ("launch", "wait") else
                              p + (" (GPU waits for host)" if p == "launch" else
                                   " (waits for slower ranks)")))
        for i, p in enumerate(PARTS)) + "\n"
    nbars = sum(len(rs) for rs in series.values())
    return render(pdir, "breakdown", body, png, svg, width=max(900, 110 * nbars + 350))


def plot_models(a, out, rows, varying):
    if not have_gnuplot():
        return []
    png, svg = gnuplot_terms()
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        return []
    pdir = os.path.join(out, "plots")
    os.makedirs(os.path.join(pdir, "data"), exist_ok=True)
    what = models_title(a, ok, varying)
    series = {}
    for r in ok:
        series.setdefault(r["series"], []).append(r)
    tps = sorted({r["tp"] for r in ok})
    made = []
    # 1-2: tokens/s per GPU and TPOT vs TP, one line per series
    files = write_series(pdir, series)
    for name, col, ylabel, ttl in (
            ("tokens_per_gpu", 2, "decode tokens/s per GPU", "Decode throughput per GPU vs TP"),
            ("tpot", 3, "TPOT (ms per output token)", "Time per output token vs TP")):
        if len(tps) > 1:
            body = vs_tp_body(files, series, tps, col, ylabel, ttl, what)
        else:
            body = bars_body(pdir, name, series, tps, col, ylabel, ttl, what)
        made += render(pdir, name, body, png, svg)
    # 3: decode step breakdown, stacked bars per run
    made += breakdown_plot(pdir, series, what, png, svg)
    return made


def plot_serve(a, out, rows, front, speeds):
    """The Pareto front and every layout's load points: output tokens/s
    per GPU vs tokens/s per user, hollow where a run misses the SLO."""
    if not have_gnuplot():
        return []
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        return []
    png, svg = gnuplot_terms()
    pdir = os.path.join(out, "plots")
    os.makedirs(os.path.join(pdir, "data"), exist_ok=True)
    series = []
    for r in ok:
        if r["series"] not in series:
            series.append(r["series"])
    colors = ["#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377",
              "#bbbbbb", "#994455", "#117733", "#332288"]
    lines = []
    for i, s in enumerate(series):
        rs = sorted([r for r in ok if r["series"] == s], key=lambda r: r["tok_per_s_per_user"])
        fn = "data/serve%02d_%s.dat" % (i, slug(s))
        with open(os.path.join(pdir, fn), "w") as f:
            f.write("# %s\n# tok_per_s_per_user output_tok_per_s_per_gpu feasible load\n" % s)
            for r in rs:
                f.write("%.6g %.6g %d %s\n" % (r["tok_per_s_per_user"],
                                               r["output_tok_per_s_per_gpu"],
                                               1 if r["feasible"] else 0, fmt_load(r["load"])))
        col = colors[i % len(colors)]
        # faint: the layout's load points joined, feasible ones filled,
        # the ones missing the SLO hollow
        lines.append("%s using 1:2 with lines lw 1 dt 2 lc rgb '%s' notitle" % (gp_str(fn), col))
        lines.append("%s using 1:($3 > 0 ? $2 : 1/0) with points pt %d ps 1.1 lc rgb '%s' "
                     "title %s" % (gp_str(fn), SERIES_POINTS[i % len(SERIES_POINTS)], col,
                                   gp_str(s)))
        lines.append("%s using 1:($3 > 0 ? 1/0 : $2) with points pt %d ps 1.1 lc rgb '%s' "
                     "notitle" % (gp_str(fn), SERIES_POINTS[i % len(SERIES_POINTS)] - 1, col))
    fn = "data/front.dat"
    with open(os.path.join(pdir, fn), "w") as f:
        f.write("# the Pareto front\n# tok_per_s_per_user output_tok_per_s_per_gpu\n")
        for r in front:
            f.write("%.6g %.6g\n" % (r["tok_per_s_per_user"], r["output_tok_per_s_per_gpu"]))
    if front:
        lines.append("%s using 1:2 with linespoints lw 3 pt 7 ps 1.4 lc rgb 'black' "
                     "title 'Pareto front (meets the SLO)'" % gp_str(fn))
    if any(not r["feasible"] for r in ok):
        lines.append("1/0 with points pt 6 ps 1.1 lc rgb '#888888' "
                     "title 'hollow: misses the SLO'")
    xs = [r["tok_per_s_per_user"] for r in ok] + speeds
    ys = [r["output_tok_per_s_per_gpu"] for r in ok]
    xmax = max(xs) * 1.1
    arrows = "".join("set arrow from %g, graph 0 to %g, graph 1 nohead dt 3 lc rgb '#888888'\n"
                     % (s, s) for s in speeds)
    r0 = ok[0]
    slo = ""
    if a.slo_ttft or a.slo_tpot:
        slo = "SLO: TTFT <= %s ms, TPOT <= %s ms for %g%% of requests" % (
            "%g" % a.slo_ttft if a.slo_ttft else "any", "%g" % a.slo_tpot if a.slo_tpot
            else "any", 100 * a.slo_attainment)
    what = a.title or "%s on %s, ISL %s / OSL %s" % (r0.get("inputs.model"),
                                                    r0.get("inputs.topology"), a.isl, a.osl)
    body = ("set title %s\nset xlabel 'tokens/s per user (1 / TPOT)'\n"
            "set ylabel 'output tokens/s per GPU'\nset grid\nset xrange [0:%g]\n"
            "set yrange [0:%g]\n%sset key outside right top\nplot " % (
                gp_str("Output tokens/s per GPU vs tokens/s per user\n%s%s" % (
                    what, ("\n" + slo) if slo else "")), xmax, max(ys) * 1.12, arrows))
    body += ", \\\n  ".join(lines) + "\n"
    made = render(pdir, "pareto", body, png, svg, width=1100, height=620)
    return made


def plot_busbw(a, out, tname, ranks, curves, calib, measured, protos):
    """busbw vs size, one curve per algorithm/protocol (protos: the order
    of the dashes), the measured points in black; whether it rendered."""
    if not shutil.which("gnuplot"):
        return False
    pdir = os.path.join(out, "plots")
    os.makedirs(os.path.join(pdir, "data"), exist_ok=True)
    for fn, lab, pts in curves:
        with open(os.path.join(pdir, fn), "w") as f:
            f.write("# %s\n# size_bytes time_us algbw busbw\n" % lab)
            for p in pts:
                f.write("%d %g %g %g\n" % p)
    colors = {"Ring": "#4477aa", "Tree": "#228833", "NVLS": "#ee6677",
              "NVLSTree": "#aa3377", "PAT": "#ccbb44"}
    plotlines = []
    for fn, lab, _ in curves:
        al, pr = lab.split()[0].split("/")
        plotlines.append("%s using 1:4 with lines lw 2 dt %d lc rgb '%s' title %s" % (
            gp_str(fn), 1 + (protos.index(pr) if pr in protos else 0),
            colors.get(al, "#666666"), gp_str(lab)))
    if measured:
        fn = "data/measured.dat"
        with open(os.path.join(pdir, fn), "w") as f:
            f.write("# %s\n" % rel_to_repo(calib))
            for p in measured:
                f.write("%d %g %g %g\n" % p)
        plotlines.append("%s using 1:4 with points pt 7 ps 1.2 lc rgb 'black' title %s" % (
            gp_str(fn), gp_str("measured, NCCL's own choice (%s)" % os.path.basename(calib))))
    top = max(p[0] for _, _, pts in curves for p in pts)
    if measured:
        top = max(top, max(p[0] for p in measured))
    xtics = ", ".join('"%s" %d' % (n, v) for n, v in (
        ("8 B", 8), ("256 B", 256), ("8 KB", 8 << 10), ("256 KB", 256 << 10),
        ("8 MB", 8 << 20), ("256 MB", 256 << 20), ("4 GB", 4 << 30)) if v <= top)
    body = ("set title %s\nset xlabel 'message size (bytes, powers of 1024)'\n"
            "set ylabel 'bus bandwidth (GB/s)'\nset logscale x 2\n"
            "set xtics (%s)\nset grid\nset yrange [0:*]\n"
            "set key inside left top box opaque\nplot " % (gp_str(
                "%s bus bandwidth vs size, one curve per NCCL_ALGO/NCCL_PROTO\n%s, %s "
                "rank(s)%s" % (a.bench, tname, ",".join(map(str, ranks)),
                               (", " + ", ".join(a.set)) if a.set else "")), xtics))
    body += ", \\\n  ".join(plotlines) + "\n"
    png, svg = gnuplot_terms()
    return bool(render(pdir, "busbw", body, png, svg, width=1000, height=600))
