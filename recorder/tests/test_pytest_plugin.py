"""The pytest plugin (capsim_recorder/pytest_plugin.py, expect.py).

Without pytest (plain python3): the marker's limits, the binary lookup, the
command line and the meaning of capsim's exit status, on expect.py alone.

With pytest in this python: inner pytest sessions (`python -m pytest` in a
subprocess, on a small test file written per case) against a fake capsim
(pytest_plugin_fixtures/fake_capsim.py, the `capsim expect` contract) and
canned recordings (pytest_plugin_fixtures/canned_conftest.py), no torch:
pass, fail with capsim's explanation, bad input, the binary on PATH or in
CAPSIM_BIN or missing (fail, or skip by option), the recorder failing, the
body's own failure, the trace and JUnit directories.

With CAPSIM_REAL_BIN naming a capsim that has `expect` (ctest sets it): the
same plugin against it, on hand-written programs. With torch too: the
worked example (examples/ci) recorded for real, against the fake capsim,
and against the real one when it has `expect`; docs/ci-recipe.md's
commands are the ones run here.

Run: python3 -m unittest discover -s recorder/tests -p test_pytest_plugin.py
(build/torch-venv/bin/python for the torch half).
"""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)
REPO = os.path.dirname(PACKAGE_ROOT)
FIXTURES = os.path.join(HERE, "pytest_plugin_fixtures")
FAKE = os.path.join(FIXTURES, "fake_capsim.py")
CANNED = os.path.join(FIXTURES, "canned")
EXAMPLE = os.path.join(REPO, "examples", "ci")
RECIPE = os.path.join(REPO, "docs", "ci-recipe.md")
WORKFLOW = os.path.join(EXAMPLE, "capsim-check.yml")
sys.path.insert(0, PACKAGE_ROOT)

from capsim_recorder import expect  # noqa: E402

HAVE_PYTEST = importlib.util.find_spec("pytest") is not None
HAVE_TORCH = importlib.util.find_spec("torch") is not None
# The inner sessions' test file and the trace name the plugin gives its test.
INNER = "test_inner.py"
INNER_STEM = "test_inner.py__test_x"


def real_capsim():
    """CAPSIM_REAL_BIN when it names a capsim with `expect`, else None."""
    path = os.environ.get("CAPSIM_REAL_BIN")
    if not path or not os.access(path, os.X_OK):
        return None
    path = os.path.abspath(path)  # the inner sessions run elsewhere
    done = subprocess.run([path, "expect", "--help"], capture_output=True, timeout=60)
    return path if done.returncode == 0 else None


REAL = real_capsim()


# -- expect.py, no pytest ------------------------------------------------------------


class MarkerTest(unittest.TestCase):
    def flags(self, **kwargs):
        return expect.expectation((), kwargs, "/tests").args()

    def test_limits_in_capsims_order(self):
        self.assertEqual(self.flags(errors=0, max_rerecords=2),
                         ["--max-rerecords", "2", "--errors", "0"])

    def test_function_scope_and_lists(self):
        self.assertEqual(self.flags(max_copy_bytes_per_call=[4, {"fwd0": 0}, "bwd0=8"]),
                         ["--max-copy-bytes-per-call", "4", "--max-copy-bytes-per-call",
                          "fwd0=0", "--max-copy-bytes-per-call", "bwd0=8"])
        self.assertEqual(self.flags(max_recordings="3"), ["--max-recordings", "3"])

    def test_bare_marker_means_no_errors(self):
        self.assertEqual(self.flags(), ["--errors", "0"])

    def test_limits_file_and_keep_going(self):
        self.assertEqual(self.flags(limits="ci/limits.toml", keep_going=True),
                         ["--limits", os.path.join("/tests", "ci/limits.toml"), "--keep-going"])

    def test_bad_arguments(self):
        for args, kwargs, said in [
            ((0,), {}, "keyword arguments only"),
            ((), {"max_rerecord": 0}, "unknown argument(s) max_rerecord"),
            ((), {"errors": -1}, "errors: expected a count"),
            ((), {"errors": True}, "errors: expected a count"),
            ((), {"errors": 1.5}, "errors: expected a count"),
            ((), {"errors": "x=y"}, "expected N or FUNCTION=N"),
            ((), {"warnings": {"a b": 0}}, "not a compiled function's name"),
            ((), {"keep_going": "yes"}, "keep_going: expected True or False"),
            ((), {"limits": 3}, "limits: expected a path"),
        ]:
            with self.subTest(kwargs=kwargs), self.assertRaises(expect.MarkerError) as e:
                expect.expectation(args, kwargs, "/tests")
            self.assertIn(said, str(e.exception))


class BinaryTest(unittest.TestCase):
    def test_capsim_bin_first(self):
        found = expect.find_binary({"CAPSIM_BIN": FAKE}, which=lambda name: "/usr/bin/capsim")
        self.assertEqual(found.path, FAKE)

    def test_path(self):
        found = expect.find_binary({}, which=lambda name: FAKE if name == "capsim" else None)
        self.assertEqual(found.path, FAKE)

    def test_missing(self):
        found = expect.find_binary({}, which=lambda name: None)
        self.assertIsNone(found.path)
        self.assertIn("not found: no CAPSIM_BIN set and no capsim on PATH", found.missing)

    def test_capsim_bin_not_executable(self):
        readme = os.path.join(PACKAGE_ROOT, "README.md")
        for named in (readme, "/no/such/capsim", "no-such-capsim-name"):
            with self.subTest(named=named):
                found = expect.find_binary({"CAPSIM_BIN": named}, which=lambda name: None)
                self.assertIsNone(found.path)
                self.assertIn(f"CAPSIM_BIN={named} is not an executable file", found.missing)


class CommandTest(unittest.TestCase):
    def test_command(self):
        wanted = expect.expectation((), {"max_rerecords": 0}, "/t")
        self.assertEqual(expect.command("/bin/capsim", "t.jsonl", wanted, junit="/r/t.xml"),
                         ["/bin/capsim", "expect", "t.jsonl", "--max-rerecords", "0",
                          "--junit", "/r/t.xml"])

    def test_file_stem(self):
        self.assertEqual(expect.file_stem("examples/ci/test_train.py::test_x[a-1]"),
                         "examples_ci_test_train.py__test_x_a-1_")
        long = expect.file_stem("t.py::test_" + "x" * 300)
        self.assertLessEqual(len(long), expect.MAX_STEM)
        self.assertNotEqual(long, expect.file_stem("t.py::test_" + "x" * 301))

    def test_verdicts(self):
        self.assertTrue(expect.verdict_of(0, "ok   errors (all functions): 0 <= 0\n", "", "c").holds)
        broken = expect.verdict_of(1, "FAIL errors (all functions): 1 > 0\n    why\n"
                                      "ok   warnings (all functions): 0 <= 0\n", "", "c")
        self.assertEqual(broken.kind, "broken")
        self.assertIn("capsim expect: 1 of 2 limits broken", broken.text)
        self.assertIn("    why", broken.text)
        bad = expect.verdict_of(2, "", "capsim: error: bad value\n", "c")
        self.assertEqual((bad.kind, bad.text.splitlines()[0]),
                         ("bad_input", "capsim expect refused its input: capsim: error: bad value"))
        old = expect.verdict_of(2, "", "capsim: error: unknown subcommand 'expect' (known: run)", "c")
        self.assertEqual(old.kind, "no_expect")
        self.assertEqual(expect.verdict_of(-11, "", "", "c").kind, "crashed")

    def test_trace_problems(self):
        for name, said in [("holds.jsonl", None), ("program_static.jsonl", None),
                           ("untranslated.jsonl", "aten.fancy_op"),
                           ("no_calls.jsonl", "made no call"),
                           ("stopped.jsonl", "recording stopped: a read failed"),
                           ("malformed.jsonl", "not a header"),
                           ("no_such.jsonl", "wrote no trace")]:
            with self.subTest(name=name):
                problem = expect.trace_problem(os.path.join(CANNED, name))
                if said is None:
                    self.assertIsNone(problem)
                else:
                    self.assertIn(said, problem)


# -- inner pytest sessions --------------------------------------------------------------


def clean_env(**changes):
    """This environment without what would steer an inner session, plus
    `changes` (a value of None removes the variable)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CAPSIM_MISSING", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "CAPSIM_BIN")}
    env["COLUMNS"] = "80"  # pytest's rules and headers at one width
    env["PYTHONPATH"] = os.pathsep.join([PACKAGE_ROOT, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    for k, v in changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def session_output(out):
    """An inner session's stdout, its timing left out (deterministic)."""
    return re.sub(r" in [0-9.]+s( \([0-9:]+\))? =", " =", out)


@unittest.skipUnless(HAVE_PYTEST, "needs pytest in this python")
class InnerSession(unittest.TestCase):
    """One inner pytest session per call of `session`, in a temporary
    directory with the canned conftest, against the fake capsim."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name
        self.log = os.path.join(self.root, "capsim.log")
        shutil.copyfile(os.path.join(FIXTURES, "canned_conftest.py"),
                        os.path.join(self.root, "conftest.py"))

    def tearDown(self):
        self.dir.cleanup()

    def session(self, body, *args, files=None, capsim=FAKE, env=None):
        with open(os.path.join(self.root, INNER), "w", encoding="utf-8") as f:
            f.write("import pytest\n\n" + textwrap.dedent(body))
        for name, text in (files or {}).items():
            with open(os.path.join(self.root, name), "w", encoding="utf-8") as f:
                f.write(textwrap.dedent(text))
        run_env = clean_env(**{"CAPSIM_BIN": capsim, "CAPSIM_CANNED_DIR": CANNED,
                               "FAKE_CAPSIM_LOG": self.log, **(env or {})})
        cmd = [sys.executable, "-m", "pytest", "-p", "capsim_recorder.pytest_plugin",
               "-p", "no:cacheprovider", "-rs", "-W", "error::pytest.PytestWarning", INNER, *args]
        return subprocess.run(cmd, cwd=self.root, env=run_env, capture_output=True, text=True,
                              timeout=600)

    def calls(self):
        """The fake capsim's runs but the `expect --help` probe: argv, cwd."""
        if not os.path.exists(self.log):
            return []
        with open(self.log, encoding="utf-8") as f:
            runs = [json.loads(line) for line in f]
        return [r for r in runs if r["argv"] != ["expect", "--help"]]

    def assertOutcome(self, done, outcome):
        self.assertRegex(done.stdout, rf"\b1 {outcome}\b", done.stdout + done.stderr)
        # (pluggy 1.1 on warns of an old-style hook wrapper that raises.)
        self.assertNotIn("TeardownRaisedWarning", done.stdout + done.stderr)


class PassFailTest(InnerSession):
    def test_limits_hold(self):
        done = self.session("""
            @pytest.mark.canned("holds.jsonl")
            @pytest.mark.capsim(max_rerecords=0, max_copy_bytes_per_call={"fwd0": 0}, errors=0)
            def test_x():
                pass
        """)
        self.assertOutcome(done, "passed")
        [run] = self.calls()
        self.assertEqual(run["argv"], ["expect", INNER_STEM + ".jsonl", "--max-rerecords", "0",
                                       "--max-copy-bytes-per-call", "fwd0=0", "--errors", "0"])
        self.assertNotEqual(run["cwd"], self.root)  # a temporary directory, removed since
        self.assertFalse(os.path.exists(run["cwd"]))

    def test_broken_limit_fails_with_the_explanation(self):
        done = self.session("""
            @pytest.mark.canned("copies.jsonl")
            @pytest.mark.capsim(max_copy_bytes_per_call=[4, {"fwd0": 0}])
            def test_x():
                pass
        """)
        self.assertOutcome(done, "failed")
        for line in ["capsim expect: 2 of 2 limits broken",
                     "FAIL max_copy_bytes_per_call (all functions): 48 > 4",
                     "FAIL max_copy_bytes_per_call (fwd0): 48 > 0",
                     "    action 44: copied inputs into the graph [fwd0]",
                     "1 input(s) were copied in (48 bytes): t4.",
                     "(--capsim-trace-dir DIR keeps the trace for capsim explain)"]:
            self.assertIn(line, done.stdout)
        self.assertNotIn("Traceback", done.stdout)

    def test_output_is_deterministic(self):
        body = """
            @pytest.mark.canned("rerecords.jsonl")
            @pytest.mark.capsim(max_rerecords=0)
            def test_x():
                pass
        """
        first = self.session(body)
        self.assertIn("FAIL max_rerecords (all functions): 3 > 0", first.stdout)
        self.assertEqual(session_output(first.stdout), session_output(self.session(body).stdout))

    def test_bad_input(self):
        done = self.session("""
            @pytest.mark.canned("holds.jsonl")
            @pytest.mark.capsim(max_rerecords={"nope": 0})
            def test_x():
                pass
        """)
        self.assertOutcome(done, "failed")
        self.assertIn("capsim expect refused its input: capsim: error: max_rerecords: the run "
                      "defines no function 'nope'", done.stdout)

    def test_limits_file_beside_the_test(self):
        done = self.session("""
            @pytest.mark.canned("rerecords.jsonl")
            @pytest.mark.capsim(limits="limits.toml", keep_going=True)
            def test_x():
                pass
        """, files={"limits.toml": """
            errors = 0
            [function.fwd0]
            max_rerecords = 1
        """})
        self.assertOutcome(done, "failed")
        self.assertIn("FAIL max_rerecords (fwd0): 3 > 1", done.stdout)
        self.assertEqual(self.calls()[0]["argv"][2:], [
            "--limits", os.path.join(os.path.realpath(self.root), "limits.toml"), "--keep-going"])

    def test_marker_error_before_the_body(self):
        done = self.session("""
            @pytest.mark.capsim(max_rerecord=0)
            def test_x():
                raise AssertionError("the body ran")
        """)
        self.assertOutcome(done, "failed")
        self.assertIn("@pytest.mark.capsim: unknown argument(s) max_rerecord", done.stdout)
        self.assertNotIn("the body ran", done.stdout)

    def test_unmarked_tests_are_left_alone(self):
        done = self.session("""
            def test_x():
                pass
        """, capsim="/no/such/capsim")
        self.assertOutcome(done, "passed")
        self.assertFalse(os.path.exists(self.log))


class BinaryLookupTest(InnerSession):
    BODY = """
        @pytest.mark.canned("holds.jsonl")
        @pytest.mark.capsim(errors=0)
        def test_x():
            pass
    """

    def test_on_path(self):
        bin_dir = os.path.join(self.root, "bin")
        os.mkdir(bin_dir)
        os.symlink(FAKE, os.path.join(bin_dir, "capsim"))
        path = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
        done = self.session(self.BODY, env={"PATH": path, "CAPSIM_BIN": None})
        self.assertOutcome(done, "passed")
        self.assertEqual(len(self.calls()), 1)

    def missing(self, *args, **env):
        empty = os.path.join(self.root, "empty")
        os.makedirs(empty, exist_ok=True)
        return self.session(self.BODY, *args, env={"PATH": empty, "CAPSIM_BIN": None, **env})

    def test_missing_fails(self):
        done = self.missing()
        self.assertOutcome(done, "failed")
        self.assertIn("capsim: not found: no CAPSIM_BIN set and no capsim on PATH; build it",
                      done.stdout)

    def test_missing_skips_on_request(self):
        for args, env in [(("--capsim-missing=skip",), {}), ((), {"CAPSIM_MISSING": "skip"}),
                          (("-o", "capsim_missing=skip"), {})]:
            with self.subTest(args=args, env=env):
                done = self.missing(*args, **env)
                self.assertOutcome(done, "skipped")
                self.assertRegex(done.stdout, r"SKIPPED \[1\] test_inner.py:\d+: capsim: not found")

    def test_bad_missing_policy_stops_the_session(self):
        done = self.missing(CAPSIM_MISSING="maybe")
        self.assertEqual(done.returncode, 4, done.stdout + done.stderr)
        self.assertIn("the missing-binary policy must be fail or skip, got 'maybe'", done.stderr)

    def test_capsim_bin_not_executable(self):
        done = self.session(self.BODY, capsim=os.path.join(self.root, "conftest.py"))
        self.assertOutcome(done, "failed")
        self.assertIn("is not an executable file", done.stdout)

    def test_capsim_without_expect(self):
        done = self.session(self.BODY, env={"FAKE_CAPSIM_NO_EXPECT": "1"})
        self.assertOutcome(done, "failed")
        self.assertIn("has no `expect` command (capsim: error: unknown subcommand 'expect'",
                      done.stdout)
        skipped = self.session(self.BODY, "--capsim-missing=skip",
                               env={"FAKE_CAPSIM_NO_EXPECT": "1"})
        self.assertOutcome(skipped, "skipped")

    def test_crash_and_timeout(self):
        for canned, args, said in [("crash.jsonl", (), "capsim expect ended with status 139:\n"
                                                       "fake capsim: crashed"),
                                   ("slow.jsonl", ("-o", "capsim_timeout=1"),
                                    "capsim expect did not finish in 1 s")]:
            with self.subTest(canned=canned):
                done = self.session(self.BODY.replace("holds.jsonl", canned), *args)
                self.assertOutcome(done, "failed")
                self.assertIn(said, done.stdout)


class RecordingTest(InnerSession):
    def test_body_recorded_fixtures_not(self):
        done = self.session("""
            from conftest import RECORDING

            @pytest.mark.canned("holds.jsonl")
            @pytest.mark.capsim
            def test_x(outside):
                assert outside is False and RECORDING["on"] is True
        """)
        self.assertOutcome(done, "passed")
        self.assertEqual(self.calls()[0]["argv"][2:], ["--errors", "0"])

    def test_recorder_fails(self):
        for fail, said in [("start", "capsim: the recorder could not start: RuntimeError: the "
                                     "canned recorder refuses to start"),
                           ("stop", "capsim: the recorder failed as the test ended: OSError: "
                                    "the canned recorder could not write its trace")]:
            with self.subTest(fail=fail):
                done = self.session(f"""
                    @pytest.mark.canned("holds.jsonl", fail="{fail}")
                    @pytest.mark.capsim
                    def test_x():
                        print("the body ran")
                """, "-s")
                self.assertOutcome(done, "failed")
                self.assertIn(said, done.stdout)
                self.assertNotIn("Traceback", done.stdout)
                self.assertEqual(fail == "stop", "the body ran" in done.stdout)

    def test_unusable_traces_are_not_checked(self):
        for canned, said in [("untranslated.jsonl", "op(s) capsim cannot express (aten.fancy_op)"),
                             ("no_calls.jsonl", "made no call of a torch.compile'd function"),
                             ("stopped.jsonl", "the recording is incomplete: recording stopped")]:
            with self.subTest(canned=canned):
                done = self.session(f"""
                    @pytest.mark.canned("{canned}")
                    @pytest.mark.capsim
                    def test_x():
                        pass
                """)
                self.assertOutcome(done, "failed")
                self.assertIn("capsim: cannot check this test: the", done.stdout)
                self.assertIn(said, done.stdout)
                self.assertEqual(self.calls(), [])

    def test_the_bodys_own_failure_and_skip_stand(self):
        done = self.session("""
            @pytest.mark.canned("copies.jsonl")
            @pytest.mark.capsim(max_copy_bytes_per_call=0)
            def test_x():
                assert 1 == 2, "the body's own failure"

            @pytest.mark.canned("copies.jsonl")
            @pytest.mark.capsim(max_copy_bytes_per_call=0)
            def test_y():
                pytest.skip("the body's own skip")
        """)
        self.assertRegex(done.stdout, r"1 failed, 1 skipped")
        self.assertIn("the body's own failure", done.stdout)
        self.assertNotIn("FAIL max_copy", done.stdout)
        self.assertEqual(self.calls(), [])

    @unittest.skipIf(HAVE_TORCH, "this python has torch")
    def test_no_torch(self):
        done = self.session("""
            @pytest.mark.capsim
            def test_x():
                pass
        """)
        self.assertOutcome(done, "failed")
        self.assertIn("capsim: the recorder could not start: torch is not "
                      "importable (No module named 'torch'); the recorder needs torch 2.8",
                      done.stdout)

    def test_collecting_imports_no_torch(self):
        done = self.session("""
            import sys

            @pytest.mark.capsim
            def test_x():
                pass

            def test_y():
                assert "torch" not in sys.modules
        """, "-k", "test_y")
        self.assertRegex(done.stdout, r"1 passed, 1 deselected")


class ReportsTest(InnerSession):
    BODY = """
        @pytest.mark.canned("copies.jsonl")
        @pytest.mark.capsim(max_copy_bytes_per_call={"fwd0": 0})
        def test_x():
            pass
    """

    def test_trace_dir_keeps_the_trace(self):
        done = self.session(self.BODY, "--capsim-trace-dir", "traces")
        trace = os.path.join(self.root, "traces", INNER_STEM + ".jsonl")
        self.assertTrue(os.path.isfile(trace))
        self.assertIn(f"trace: {os.path.realpath(trace)} (capsim explain --as-on-a-gpu", done.stdout)
        self.assertEqual(self.calls()[0]["cwd"], os.path.realpath(os.path.dirname(trace)))

    def test_junit_dir(self):
        done = self.session(self.BODY, "--capsim-junit-dir", "reports")
        report = os.path.join(os.path.realpath(self.root), "reports", INNER_STEM + ".xml")
        self.assertOutcome(done, "failed")
        self.assertEqual(self.calls()[0]["argv"][-2:], ["--junit", report])
        with open(report, encoding="utf-8") as f:
            self.assertIn('failures="1"', f.read())


# -- a real capsim -------------------------------------------------------------------------


@unittest.skipUnless(REAL, "needs CAPSIM_REAL_BIN naming a capsim with `expect`")
class RealCapsimTest(InnerSession):
    """The plugin against the real `capsim expect`, on hand-written programs
    (data/programs' persistent buffer and kept output, and a static one)."""

    def check(self, canned, limits):
        return self.session(f"""
            @pytest.mark.canned("{canned}")
            @pytest.mark.capsim({limits})
            def test_x():
                pass
        """, capsim=REAL)

    def test_holds(self):
        self.assertOutcome(self.check("program_static.jsonl",
                                      "max_rerecords=0, max_copy_bytes_per_call=0, errors=0"),
                           "passed")

    def test_copy(self):
        done = self.check("program_copied.jsonl", "max_copy_bytes_per_call={'step': 0}")
        self.assertOutcome(done, "failed")
        self.assertIn("FAIL max_copy_bytes_per_call (step): 256 > 0", done.stdout)
        self.assertIn("copied in (256 bytes): state", done.stdout)

    def test_overwritten_output(self):
        done = self.check("program_overwritten.jsonl", "errors=0")
        self.assertOutcome(done, "failed")
        self.assertIn("FAIL errors (all functions): 1 > 0", done.stdout)
        self.assertIn("accessing tensor output of CUDAGraphs that has been overwritten", done.stdout)

    def test_unknown_function(self):
        done = self.check("program_static.jsonl", "max_rerecords={'fwd9': 0}")
        self.assertOutcome(done, "failed")
        self.assertIn("capsim expect refused its input: capsim: error:", done.stdout)


# -- the worked example and the recipe -------------------------------------------------------

# What docs/ci-recipe.md tells to run, from the repository's root (the
# workflow's step too); `python` is the python with torch, pytest and the
# recorder.
EXAMPLE_COMMAND = "python -m pytest examples/ci"
VARIANT_ENV = "CI_EXAMPLE_VARIANT"


def run_example(capsim, variant=None, *args, **env_changes):
    """EXAMPLE_COMMAND with this python, CAPSIM_BIN=capsim, the variant in
    CI_EXAMPLE_VARIANT."""
    env = clean_env(CAPSIM_BIN=capsim, **{VARIANT_ENV: variant}, **env_changes)
    cmd = [sys.executable, *EXAMPLE_COMMAND.split()[1:], *args]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


class RecipeTest(unittest.TestCase):
    """docs/ci-recipe.md shows the workflow file as it is and the commands
    this file runs."""

    def test_recipe_shows_the_workflow_and_commands(self):
        with open(RECIPE, encoding="utf-8") as f:
            recipe = f.read()
        with open(WORKFLOW, encoding="utf-8") as f:
            workflow = f.read()
        self.assertIn(f"```yaml\n{workflow}```", recipe)
        self.assertIn(f"run: {EXAMPLE_COMMAND}", workflow)
        for variant in ("fresh-batch", "kept-loss"):
            self.assertIn(f"{VARIANT_ENV}={variant} PYTHONPATH=recorder {EXAMPLE_COMMAND}", recipe)
        self.assertIn(f"PYTHONPATH=recorder {EXAMPLE_COMMAND}\n", recipe)


@unittest.skipUnless(HAVE_PYTEST and HAVE_TORCH, "needs torch and pytest in this python")
class ExampleRecordedTest(unittest.TestCase):
    """The worked example recorded for real (about 30 s, Inductor's CPU
    compile), against the fake capsim: the trace has the compiled forward
    the limits name, and capsim gets the marker's limits."""

    def test_good_loop(self):
        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, "capsim.log")
            done = run_example(FAKE, None, "--capsim-trace-dir", tmp, FAKE_CAPSIM_LOG=log)
            self.assertIn("1 passed", done.stdout, done.stdout + done.stderr)
            trace = os.path.join(tmp, "test_train.py__test_training_loop.jsonl")
            with open(trace, encoding="utf-8") as f:
                lines = [json.loads(line) for line in f]
            self.assertEqual([l["function"] for l in lines if l["type"] == "function"],
                             ["fwd0", "bwd0"])
            with open(log, encoding="utf-8") as f:
                argv = [json.loads(line)["argv"] for line in f][-1]
            self.assertEqual(argv[2:], ["--max-rerecords", "0", "--max-copy-bytes-per-call",
                                        "fwd0=0", "--errors", "0"])

    def test_a_recording_inside_a_recording(self):
        """The recorder refusing to start is the test's failure, named."""
        with tempfile.TemporaryDirectory() as tmp:
            test = os.path.join(tmp, "test_nested.py")
            with open(test, "w", encoding="utf-8") as f:
                f.write(textwrap.dedent("""
                    import pytest, capsim_recorder

                    @pytest.fixture
                    def recording(tmp_path):
                        with capsim_recorder.record(str(tmp_path / "t.jsonl"), cudagraphs=True):
                            yield

                    @pytest.mark.capsim
                    def test_x(recording):
                        pass
                """))
            done = subprocess.run([sys.executable, "-m", "pytest", "-p",
                                   "capsim_recorder.pytest_plugin", "-p", "no:cacheprovider", test],
                                  cwd=tmp, env=clean_env(CAPSIM_BIN=FAKE), capture_output=True,
                                  text=True, timeout=600)
        self.assertIn("1 failed", done.stdout, done.stdout + done.stderr)
        self.assertIn("capsim: the recorder could not start: RuntimeError: "
                      "capsim_recorder.record(): a recording is already running", done.stdout)


def failures_section(out):
    """A pytest session's FAILURES section, up to the captured output."""
    start = out.index("=" * 35 + " FAILURES")
    end = min(i for i in (out.find("-" * 29 + " Captured", start),
                          out.find("=" * 27 + " short test summary", start)) if i >= 0)
    return out[start:end]


def torch_release():
    from importlib.metadata import version

    return version("torch").split("+")[0]


@unittest.skipUnless(HAVE_PYTEST and HAVE_TORCH and REAL,
                     "needs torch, pytest and CAPSIM_REAL_BIN naming a capsim with `expect`")
class WorkedExampleTest(unittest.TestCase):
    """docs/ci-recipe.md's worked example, as it says: the good loop passes,
    each one-line change fails with capsim's explanation, and on the
    recipe's torch (2.11.0) with the very text the recipe shows."""

    def assertInRecipe(self, out):
        if torch_release() != "2.11.0":  # action numbers may differ on another release
            return
        with open(RECIPE, encoding="utf-8") as f:
            self.assertIn(failures_section(out), f.read())

    def test_good(self):
        done = run_example(REAL)
        self.assertIn("1 passed", done.stdout, done.stdout + done.stderr)

    def test_fresh_batch(self):
        done = run_example(REAL, "fresh-batch")
        self.assertIn("1 failed", done.stdout, done.stdout + done.stderr)
        self.assertIn("FAIL max_copy_bytes_per_call (fwd0): 48 > 0", done.stdout)
        self.assertIn("1 input(s) were copied in (48 bytes)", done.stdout)
        self.assertInRecipe(done.stdout)

    def test_kept_loss(self):
        done = run_example(REAL, "kept-loss")
        self.assertIn("1 failed", done.stdout, done.stdout + done.stderr)
        self.assertIn("FAIL errors (all functions): 1 > 0", done.stdout)
        self.assertIn("accessing tensor output of CUDAGraphs that has been overwritten",
                      done.stdout)
        self.assertInRecipe(done.stdout)


if __name__ == "__main__":
    unittest.main()
