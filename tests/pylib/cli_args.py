"""The entry point the command-line tests share: their two arguments (--mcuprof, the tool under
test; --fixtures, the ELFs built for the tests), set as the test module's ARGS, then unittest
with whatever arguments are left (a test name, -k PATTERN)."""
import argparse
import sys
import unittest


def main(module_globals: dict) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mcuprof", required=True)
    parser.add_argument("--fixtures", required=True)
    module_globals["ARGS"], rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)
