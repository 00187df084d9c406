"""`python -m capsim_recorder run`'s usage checks, which run before torch is
imported: an output that is the script itself (the same path, a link, a hard
link) is refused with exit 2 and the script is left as it was, as capsim's
own guard refuses an output onto an input (docs/reliability.md). No torch
needed."""

import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from launching import launch  # noqa: E402

SCRIPT = "print('the script ran')\n"


class OutputOntoScriptTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.script = os.path.join(self.dir.name, "train.py")
        with open(self.script, "w", encoding="utf-8") as f:
            f.write(SCRIPT)
        os.symlink(self.script, os.path.join(self.dir.name, "link.py"))
        os.link(self.script, os.path.join(self.dir.name, "hard.py"))

    def tearDown(self):
        self.dir.cleanup()

    def test_every_alias_of_the_script_is_refused(self):
        for name in ["train.py", "link.py", "hard.py"]:
            with self.subTest(output=name):
                before = sorted(os.listdir(self.dir.name))
                done = launch(os.path.join(self.dir.name, name), "--", self.script, timeout=60)
                self.assertEqual(done.returncode, 2, done.stderr)
                self.assertIn("is the input", done.stderr)
                self.assertNotIn("the script ran", done.stdout)
                with open(self.script, encoding="utf-8") as f:
                    self.assertEqual(f.read(), SCRIPT)
                self.assertEqual(sorted(os.listdir(self.dir.name)), before)


if __name__ == "__main__":
    unittest.main()
