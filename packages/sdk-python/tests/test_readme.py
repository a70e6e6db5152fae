"""The README shows the example the live test runs, as written."""

import os
import re
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


class ReadmeTests(unittest.TestCase):
    def test_when_the_readme_shows_the_trading_bot_then_it_is_the_file_the_live_test_runs(self) -> None:
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        with open(os.path.join(ROOT, "examples", "trading_bot.py"), encoding="utf-8") as f:
            example = f.read()
        shown = re.search(r"<!-- examples/trading_bot.py -->\n```python\n(.*?)```", readme, re.S)
        self.assertIsNotNone(shown)
        assert shown is not None
        self.assertEqual(shown.group(1), example)

    def test_when_the_readme_says_how_to_install_then_it_is_the_offline_command(self) -> None:
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            self.assertIn("python -m pip install --no-build-isolation ./packages/sdk-python", f.read())


if __name__ == "__main__":
    unittest.main()
