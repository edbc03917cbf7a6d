"""Outputs every mode shares: flat rows (nested JSON keys joined with
'.'), results.csv and results.json, and the number formats of the
Markdown tables."""
import csv
import json
import os


def flatten(obj, prefix="", out=None):
    if out is None:
        out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            flatten(v, prefix + k + ".", out) if isinstance(v, dict) else \
                out.__setitem__(prefix + k, v)
    else:
        out[prefix.rstrip(".")] = obj
    return out


def csv_value(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list):
        return ";".join(csv_value(x) for x in v)
    if isinstance(v, float):
        return repr(round(v, 10))
    return str(v)


def write_table(out_dir, rows, first_cols):
    """DIR/results.csv and DIR/results.json: one row per run, first_cols
    first, then every other key in the order the rows hold them."""
    cols = list(first_cols)
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    with open(os.path.join(out_dir, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([csv_value(r.get(c)) for c in cols])
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(rows, f, indent=1)
        f.write("\n")
    return cols


def write_markdown(out_dir, lines):
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write("\n".join(lines))


def num(v, fmt="%.3f"):
    if v is None or v == "":
        return "-"
    try:
        return fmt % float(v)
    except (TypeError, ValueError):
        return str(v)


def fmt_load(x):
    return "%d" % x if float(x) == int(x) else "%.6g" % x


def md_row(cells):
    return "| " + " | ".join(cells) + " |"


def md_head(cols):
    """A Markdown table's header and rule."""
    return [md_row(cols), "|" + "---|" * len(cols)]
