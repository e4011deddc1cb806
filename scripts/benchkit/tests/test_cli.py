import unittest

from benchkit import cli


class Arguments(unittest.TestCase):
    def test_defaults_by_mode(self):
        self.assertEqual(cli.parse([]).count, 50_000)
        celebrity = cli.parse(["--mode", "celebrity"])
        self.assertEqual((celebrity.count, celebrity.database, celebrity.workers), (1_000_000, "postgres", 1))
        self.assertEqual(cli.parse(["--mode", "push"]).count, 20_000)
        self.assertEqual(cli.parse([]).broker_runs, 3)

    def test_refuses_what_cannot_run(self):
        for arguments in (["--mode", "live"], ["--rate", "5"], ["--workers", "3"], ["--cpu", "--mode", "live"],
                          ["--count", "0"], ["--broker-runs", "0"], ["--no-broker", "--broker-only"],
                          ["--live-fractions", "0.25"],
                          ["--cpu", "--live-fractions", "0,0.5"], ["--cpu", "--live-fractions", "1.5"],
                          ["--cpu", "--live-fractions", "half"]):
            with self.subTest(arguments=arguments), self.assertRaises(SystemExit):
                cli.parse(arguments)

    def test_a_fleet_on_postgres(self):
        options = cli.parse(["--cpu", "--workers", "3", "--database", "postgres"])
        self.assertTrue(options.cpu)
        self.assertEqual(options.workers, 3)
        self.assertEqual(options.live_fractions, [0.5])

    def test_live_runs_at_fractions_of_the_capacity(self):
        options = cli.parse(["--cpu", "--live-fractions", "0.1,0.25,0.5"])
        self.assertEqual(options.live_fractions, [0.1, 0.25, 0.5])

    def test_publishing_alone_at_c_2_and_at_the_lowest_live_fraction(self):
        self.assertEqual(cli.alone_fractions([0.1, 0.25, 0.5]), [0.1, 0.5])
        self.assertEqual(cli.alone_fractions([0.3, 0.2]), [0.2, 0.5])
        self.assertEqual(cli.alone_fractions([0.5]), [0.5])


if __name__ == "__main__":
    unittest.main()
