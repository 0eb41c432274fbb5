"""`stallscope help [COMMAND [SUBCOMMAND]]` against `COMMAND ... --help`, the
top-level help's list (every bench, --version), a word that is not a
command, and the bash completion the binary writes, run in a real bash:
what it offers after `stallscope `, `stallscope bench `, `help bench ` and
`bench io --`.

Run: /usr/bin/python3 help_cli.py PATH_TO_STALLSCOPE
"""

import subprocess
import unittest

import e2e_common as e2e


class Help(unittest.TestCase):
    def test_help_is_dash_dash_help(self):
        # `help` builds every command's flags; `COMMAND --help` builds the
        # named command's alone (a faster start): the same page, every one.
        commands = ["doctor", "run", "watch", "report", "diff", "history", "scale", "trace",
                    "nccl-log", "dataset", "bench", "pack", "net", "snapshot", "plan",
                    "exporter", "ab", "cluster", "hook-env"]
        subcommands = [["bench", "io"], ["bench", "h2d"], ["bench", "allreduce"],
                       ["plan", "loader"], ["plan", "memory"], ["net", "serve"],
                       ["net", "probe"]]
        for words in [[c] for c in commands] + subcommands:
            rc, out, err, _ = e2e.run(["help"] + words)
            self.assertEqual(rc, 0, err)
            rc2, out2, err2, _ = e2e.run(words + ["--help"])
            self.assertEqual(rc2, 0, err2)
            self.assertEqual(out, out2, words)
            self.assertIn("Usage: stallscope " + " ".join(words), out)

    def test_top_level_lists_every_bench_and_version(self):
        rc, out, err, _ = e2e.run(["help"])
        self.assertEqual(rc, 0, err)
        rc2, out2, _, _ = e2e.run(["--help"])
        self.assertEqual(out, out2)
        for line in ["bench io", "bench h2d", "bench allreduce", "plan memory", "net probe",
                     "hook-env", "--version", "--help"]:
            self.assertRegex(out, r"(?m)^\s+%s\s" % line, line)

    def test_unknown_words_name_themselves(self):
        rc, out, err, _ = e2e.run(["help", "bench", "nosuch"])
        self.assertEqual(rc, 2)
        self.assertIn("'nosuch' is not a command of stallscope bench: one of io, h2d, allreduce",
                      err)
        rc, out, err, _ = e2e.run(["help", "nosuch"])
        self.assertEqual(rc, 2)
        self.assertIn("'nosuch'", err)
        rc, out, err, _ = e2e.run(["help", "doctor", "more"])
        self.assertEqual(rc, 2)
        self.assertIn("has no subcommands", err)


class Completion(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rc, cls.script, err, _ = e2e.run(["help", "--bash-completion"])
        if rc != 0:
            raise AssertionError(err)

    def complete(self, line):
        """What the completion offers for LINE (the cursor at its end)."""
        words = line.split(" ")
        program = (self.script + "\nCOMP_WORDS=(%s)\nCOMP_CWORD=%d\n_stallscope\n"
                   "printf '%%s\\n' \"${COMPREPLY[@]}\"\n") % (
                       " ".join("'%s'" % w for w in words), len(words) - 1)
        proc = subprocess.run(["bash", "-c", program], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return set(proc.stdout.split())

    def test_commands_and_subcommands(self):
        top = self.complete("stallscope ")
        self.assertTrue({"doctor", "run", "bench", "hook-env", "help", "--version"} <= top, top)
        self.assertEqual(self.complete("stallscope bench "),
                         {"io", "h2d", "allreduce", "--help"})
        self.assertEqual(self.complete("stallscope help bench "),
                         {"io", "h2d", "allreduce", "--help"})
        self.assertEqual(self.complete("stallscope bench io --j"), {"--jobs", "--json"})
        self.assertEqual(self.complete("stallscope hook-env --h"), {"--help", "--hook-socket"})


if __name__ == "__main__":
    e2e.main()
