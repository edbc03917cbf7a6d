"""test_nvlsweep.py NVLEMU: unit tests of bench/nvlsweep's pure parts: the
value parsers, the grid (its run ids, the pairs it leaves out), the serve
layouts and loads, the Pareto front, and the choices read from `nvlemu
--list` (and refused with nvlemu's names)."""
import argparse
import os
import sys
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
from nvlsweep import families, grid, options, outputs, points, runs, serve, serve_grid  # noqa: E402

NVLEMU = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else None


def parse(*args):
    a = options.build_parser().parse_args(list(args) + ["--nvlemu", NVLEMU or "/nonexistent"])
    if a.tp is None and not (a.serve and a.disagg):
        a.tp = [8, 16, 72]
    return a


class Values(unittest.TestCase):
    def test_time(self):
        self.assertEqual(options.time_ms("500"), 500)
        self.assertEqual(options.time_ms("0.5s"), 500)
        self.assertAlmostEqual(options.time_ms("250us"), 0.25)
        for bad in ("5 parsecs", "-1", "fast"):
            with self.assertRaises(argparse.ArgumentTypeError):
                options.time_ms(bad)

    def test_lists(self):
        self.assertEqual(options.int_list("8, 16,72"), [8, 16, 72])
        self.assertEqual(options.limit_list("0,256"), [0, 256])
        for bad in ("0", "x", ","):
            with self.assertRaises(argparse.ArgumentTypeError):
                options.int_list(bad)

    def test_what_if(self):
        self.assertEqual(grid.parse_what_if("slow=nvlink.link_bw=10GB/s,c2c.bw=1GB/s"),
                         ("slow", ["nvlink.link_bw=10GB/s", "c2c.bw=1GB/s"]))
        with self.assertRaises(SystemExit):
            grid.parse_what_if("bad name=a=b")

    def test_flat_rows(self):
        self.assertEqual(outputs.flatten({"a": {"b": 1, "c": {"d": 2}}, "e": 3}),
                         {"a.b": 1, "a.c.d": 2, "e": 3})
        self.assertEqual([outputs.csv_value(v) for v in (None, True, [1, "x"], 0.1 + 0.2)],
                         ["", "yes", "1;x", "0.3"])


class Grid(unittest.TestCase):
    def test_ids_of_saved_runs(self):
        """The ids of docs/what-if/scaling's runs (saved by earlier versions)."""
        runs = grid.build_grid(parse("--model", "qwen2.5-72b", "--tp", "8,16,72",
                                     "--batch", "1,32", "--ctx", "4096"))
        ids = [grid.run_id(r, None, None) for r in runs]
        saved = os.listdir(os.path.join(REPO, "docs", "what-if", "scaling", "runs"))
        self.assertEqual(len(ids), 6)
        for rid in ids:
            self.assertIn(rid + ".json", saved)

    def test_nccl_never_fused(self):
        runs = grid.build_grid(parse("--tp", "8", "--allreduce", "nccl,oneshot",
                                     "--fuse-allreduce-norm", "no,yes"))
        self.assertEqual([(r["allreduce"], r["fuse_norm"]) for r in runs],
                         [("nccl", "no"), ("oneshot", "no"), ("oneshot", "yes")])

    def test_lengths(self):
        with self.assertRaises(SystemExit):
            grid.build_grid(parse("--ctx", "16", "--prompt-len", "8"))
        runs = grid.build_grid(parse("--tp", "2", "--prompt-len", "8"))
        self.assertEqual((runs[0]["prompt_len"], runs[0]["gen_len"]), (8, 16))


class Points(unittest.TestCase):
    def jobs(self, *args):
        a = parse(*args)
        jobs = []
        for r in grid.build_grid(a):
            rid = grid.run_id(r, None, None)
            cmd, env = grid.run_command(a, r, "nvlemu", "mpirun", rid + ".json")
            jobs.append(runs.Job(rid, rid + ".json", cmd, env, rid, 1))
        return jobs

    def test_groups_share_ranks_and_variables(self):
        """One group per rank count and NCCL_* setting, the grid's order
        kept; each point's line is its run's options after `nvlemu run`."""
        jobs = self.jobs("--model", "qwen2.5-7b", "--tp", "2,3", "--batch", "1,8",
                         "--nccl-algo", "default,Ring")
        groups = points.group_jobs(jobs, "nvlemu")
        self.assertEqual([len(g) for g in groups], [2, 2, 2, 2])
        self.assertEqual([j for g in groups for j in g], sorted(
            jobs, key=lambda j: (j.cmd[2], "NCCL_ALGO" in j.env, jobs.index(j))))
        path, text, cmd = points.points_command(groups[0], "nvlemu", "runs")
        self.assertEqual(cmd[:3] + cmd[-4:],
                         ["mpirun", "-n", "2", "nvlemu", "run", "--points", path])
        self.assertEqual(text.splitlines()[1].split()[-1], groups[0][1].rid + ".json")

    def test_cut_at_point_lines(self):
        """A points job's output cut at its `# point FILE:LINE` lines: the
        text before the first goes to it, a point ends when the next
        starts (exit code 0) or with the job."""
        class Quiet:
            def show(self, label):
                pass
        ended = []
        pj = points.PointsJob("p.txt", [runs.Job("a", "", [], {}, "a", 1)] * 3, Quiet(),
                              lambda k, rc, wall, text: ended.append((k, rc, text)))
        for line in ("warm-up\n", "# point p.txt:1: --batch 1\n", "one\n",
                     "# point other.txt:2: x\n", "# point p.txt:2: --batch 8\n", "bad\n"):
            pj.on_line(line)
        pj.end_point(1)
        self.assertEqual([(k, rc) for k, rc, _ in ended], [(0, 0), (1, 1)])
        self.assertEqual(ended[0][2], "warm-up\n# point p.txt:1: --batch 1\none\n"
                         "# point other.txt:2: x\n")
        self.assertEqual(ended[1][2], "# point p.txt:2: --batch 8\nbad\n")
        self.assertEqual(pj.seen, [0, 1])


class Serve(unittest.TestCase):
    def test_layouts(self):
        a = parse("--serve", "--tp", "8", "--disagg", "tp4x3:8", "--rate", "1")
        self.assertEqual(serve_grid.serve_layouts(a), [
            ("tp8", {"kind": "agg", "tp": 8}),
            ("tp4x3:tp8x1", {"kind": "disagg", "pools": [(4, 3), (8, 1)]})])
        with self.assertRaises(SystemExit):
            serve_grid.parse_pool("8x", "8x:8")

    def test_grid_fills_the_system(self):
        a = parse("--serve", "--tp", "8,32", "--system-gpus", "16", "--ep", "3",
                  "--concurrency", "4", "--load-per", "replica")
        runs, skipped = serve_grid.build_serve_grid(a)
        self.assertEqual(runs, [])
        self.assertEqual(len(skipped), 2)  # EP 3 divides neither; 32 > 16 GPUs
        a = parse("--serve", "--tp", "8", "--system-gpus", "16", "--concurrency", "4",
                  "--load-per", "replica", "--requests", "x2")
        (r,), _ = serve_grid.build_serve_grid(a)
        self.assertEqual((r["copies"], r["ranks"]), (2, 8))
        self.assertEqual(serve_grid.serve_load(a, r), (8, 4, 8))

    def test_pareto(self):
        pts = [(1, 5), (2, 4), (2, 3), (3, 1), (0.5, 5), (3, 1)]
        # (2, 3) and (0.5, 5) are dominated; equal points do not dominate
        self.assertEqual(serve.pareto(pts), [0, 1, 3, 5])
        self.assertEqual(serve.pareto([(1, 1)]), [0])


    def test_step_of_one_replica(self):
        # three decode replicas of 10 steps each (30 in all), each 20 ms of
        # gemm (the mean over the pool's ranks): a step is 2 ms, not 20 / 30;
        # with a prefill pool of one replica, 5 steps of 4 ms each, the run's
        # mean step is (3 x 20 + 20) / 35
        dec = {"name": "decode", "replicas": 3, "steps": 30,
               "step_time_ms_by_part": {"gemm": 20.0}}
        row = serve.serve_flat({"pools": [dec]})
        self.assertAlmostEqual(row["step_ms.gemm"], 2.0)
        self.assertAlmostEqual(row["pool.decode.ms_per_step.gemm"], 2.0)
        self.assertEqual(row["step_ms.attention"], 0.0)
        pre = {"name": "prefill", "replicas": 1, "steps": 5,
               "step_time_ms_by_part": {"gemm": 20.0}}
        row = serve.serve_flat({"pools": [pre, dec]})
        self.assertAlmostEqual(row["pool.prefill.ms_per_step.gemm"], 4.0)
        self.assertAlmostEqual(row["step_ms.gemm"], 80.0 / 35)

class Families(unittest.TestCase):
    def test_spelled(self):
        self.assertEqual(families.spelled(["tp", "dp"]), "tp or dp")
        self.assertEqual(families.spelled(["a", "b", "c"]), "a, b, c")

    @unittest.skipIf(NVLEMU is None, "no nvlemu given")
    def test_from_nvlemu(self):
        listed = families.listed(NVLEMU)
        self.assertIn("allreduce", listed)
        self.assertEqual(families.names(NVLEMU, "allreduce"), listed["allreduce"])
        with self.assertRaises(SystemExit) as e:
            families.check(NVLEMU, "allreduce", ["nccl", "threeshot"])
        self.assertIn("--allreduce 'threeshot': expected nccl, ", str(e.exception))

    def test_members_keep_order_take_new(self):
        """--collectives' default: the sweep's order first, then what else
        nvlemu lists; a member nvlemu does not list is dropped."""
        families._listed["fake"] = {"algorithm": ["Tree", "Ring", "New"]}
        try:
            self.assertEqual(families.members("fake", "algos", ["Ring", "Tree", "Gone"]),
                             ["Ring", "Tree", "New"])
        finally:
            del families._listed["fake"]

    @unittest.skipIf(NVLEMU is None, "no nvlemu given")
    def test_collectives_defaults_from_nvlemu(self):
        self.assertEqual(families.members(NVLEMU, "algos", options.ALGOS), options.ALGOS)
        self.assertEqual(families.members(NVLEMU, "protos", options.PROTOS), options.PROTOS)

    @unittest.skipIf(NVLEMU is None, "no nvlemu given")
    def test_every_choice_has_names(self):
        """From nvlemu, or the sweep's own until nvlemu lists the family."""
        for option, (family, until_listed) in families.CHOICES.items():
            if family not in families.listed(NVLEMU):
                self.assertTrue(until_listed, "%s: neither nvlemu nor the sweep "
                                "lists its names" % option)


if __name__ == "__main__":
    unittest.main()
