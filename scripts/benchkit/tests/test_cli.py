import unittest

from benchkit import cli


class Arguments(unittest.TestCase):
    def test_defaults_by_mode(self):
        self.assertEqual(cli.parse([]).count, 50_000)
        celebrity = cli.parse(["--mode", "celebrity"])
        self.assertEqual((celebrity.count, celebrity.database, celebrity.workers), (1_000_000, "postgres", 1))
        self.assertEqual(cli.parse(["--mode", "push"]).count, 20_000)

    def test_refuses_what_cannot_run(self):
        for arguments in (["--mode", "live"], ["--rate", "5"], ["--workers", "3"], ["--cpu", "--mode", "live"],
                          ["--count", "0"], ["--no-broker", "--broker-only"]):
            with self.subTest(arguments=arguments), self.assertRaises(SystemExit):
                cli.parse(arguments)

    def test_a_fleet_on_postgres(self):
        options = cli.parse(["--cpu", "--workers", "3", "--database", "postgres"])
        self.assertTrue(options.cpu)
        self.assertEqual(options.workers, 3)


if __name__ == "__main__":
    unittest.main()
