import shutil
import unittest

from benchkit import instructions

# callgrind's output format as valgrind 3.19 writes it: names compressed to "(n)" after their first use, relative
# positions ("+2", "-1", "*"), a call's inclusive cost on the line after its `calls=`, which is not the caller's own.
DUMP = """\
# callgrind format
version: 1
creator: callgrind-3.19.0
positions: line
events: Ir
summary: 999

ob=(1) /work/badgepipe
fl=(1) ???
fn=(1) $s4main3runyyF
0 100
+2 20
cfn=(2) swift_retain
calls=3 0
0 900
* 5

fn=(2)
0 30
fl=(2) ???
fn=(3) memcpy
-1 7
cfn=(2)
calls=1 0
0 10

fn=(1)
0 8

totals: 170
"""


class Parse(unittest.TestCase):
    def test_own_costs_by_function_without_the_calls_inclusive_costs(self):
        profile = instructions.parse(DUMP.splitlines(keepends=True))
        self.assertEqual(profile.by_function, {"$s4main3runyyF": 133, "swift_retain": 30, "memcpy": 7})
        self.assertEqual(profile.total, 170)
        self.assertEqual(profile.top(2), [("$s4main3runyyF", 133), ("swift_retain", 30)])

    def test_the_total_is_the_sum_of_the_own_costs_without_a_totals_line(self):
        lines = [line for line in DUMP.splitlines() if not line.startswith("totals:")]
        self.assertEqual(instructions.parse(lines).total, 170)


class Demangle(unittest.TestCase):
    @unittest.skipIf(shutil.which("swift") is None, "no swift toolchain")
    def test_swift_symbols_demangled_others_kept_in_order(self):
        names = instructions.demangle(["$s4main3runyyF", "memcpy", "$sSi"])
        self.assertEqual(names, ["run()", "memcpy", "Int"])


if __name__ == "__main__":
    unittest.main()
