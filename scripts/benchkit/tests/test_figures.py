import math
import unittest

from benchkit import cpu, figures


class Percentiles(unittest.TestCase):
    def test_nearest_rank(self):
        values = list(range(1, 101))
        self.assertEqual(figures.percentile(values, 0.5), 50)
        self.assertEqual(figures.percentile(values, 0.99), 99)
        self.assertEqual(figures.percentile(values, 1.0), 100)
        self.assertEqual(figures.percentile([7], 0.99), 7)
        self.assertTrue(figures.percentile([], 0.5) != figures.percentile([], 0.5))  # NaN


class Latencies(unittest.TestCase):
    def test_only_accepted_alerts_with_a_known_event(self):
        deliveries = [
            {"status": 200, "received_at": "2026-01-01T00:00:01.250Z", "payload": {"aps": {}, "event_id": "a"}},
            {"status": 200, "received_at": "2026-01-01T00:00:01.100Z",
             "payload": {"message": {"data": {"event_id": "b"}}}},
            {"status": 503, "received_at": "2026-01-01T00:00:01.000Z", "payload": {"aps": {}, "event_id": "a"}},
            {"status": 200, "received_at": "2026-01-01T00:00:01.000Z", "payload": {"aps": {"badge": 3}}},
            {"status": 200, "received_at": "2026-01-01T00:00:01.000Z", "payload": {"aps": {}, "event_id": "zz"}},
        ]
        second = 1_767_225_600_000_000 + 1_000_000  # 2026-01-01T00:00:01Z in µs
        found, unknown = figures.latencies(deliveries, {"a": second, "b": second})
        self.assertEqual(unknown, 1)
        self.assertEqual([round(value) for value in found], [100, 250])


class Cpu(unittest.TestCase):
    def test_machine_busy_leaves_out_idle_and_iowait(self):
        text = "cpu  100 5 50 1000 20 3 2 0 0 0\ncpu0 50 2 25 500 10 1 1 0 0 0\n"
        busy = cpu.machine_busy_seconds(text)
        self.assertAlmostEqual(busy, (100 + 5 + 50 + 3 + 2) / cpu.CLOCK_TICKS)

    def test_process_seconds_reads_past_a_name_with_spaces_and_parentheses(self):
        # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
        text = "42 (a (b) c) S 1 42 42 0 -1 4194304 10 0 0 0 700 300 20 10 20 0 4 0 100"
        self.assertAlmostEqual(cpu.process_seconds(text), 1030 / cpu.CLOCK_TICKS)

    def test_between_snapshots_a_part_that_appeared_counts_from_zero(self):
        seconds = figures.cpu_between({"machine": 10.0, "workers": 1.0}, {"machine": 12.5, "workers": 2.0, "sink": 0.5})
        self.assertEqual(seconds, {"machine": 2.5, "workers": 1.0, "sink": 0.5})

    def test_broker_messages_per_event(self):
        self.assertAlmostEqual(figures.broker_messages_per_event(328, 82), 4.0)


class BrokerBaseline(unittest.TestCase):
    def test_the_median_of_each_figure_on_its_own(self):
        runs = [(40_000.0, 30_000.0, 110.0), (50_000.0, 90_000.0, 78.0), (45_000.0, 60_000.0, 96.0)]
        self.assertEqual(figures.median_baseline(runs), (45_000.0, 60_000.0, 96.0))

    def test_an_even_count_takes_the_mean_of_the_middle_two_and_a_missing_figure_is_left_out(self):
        nan = float("nan")
        publish, consume, machine = figures.median_baseline([(1.0, nan, 80.0), (3.0, 10.0, 100.0)])
        self.assertEqual((publish, consume, machine), (2.0, 10.0, 90.0))
        self.assertTrue(math.isnan(figures.median_baseline([(nan, nan, nan)])[1]))

    def test_one_run_is_its_own_baseline(self):
        self.assertEqual(figures.median_baseline([(1.0, 2.0, 3.0)]), (1.0, 2.0, 3.0))


class Windows(unittest.TestCase):
    def test_windows_cover_the_series_in_order(self):
        series = [(t, t * 10) for t in range(0, 11)]  # 0..100 counted
        found = figures.windows(series, 30)
        self.assertEqual([(a[1], b[1]) for a, b in found], [(0, 30), (30, 60), (60, 90), (90, 100)])
        self.assertEqual(figures.windows([], 5), [])


class Utilisation(unittest.TestCase):
    def test_share_of_the_cores(self):
        self.assertAlmostEqual(figures.utilisation(3.0, 2.0, cores=2), 0.75)
        self.assertAlmostEqual(figures.utilisation(1.0, 1.0, cores=1), 1.0)
        self.assertTrue(figures.utilisation(1.0, 0.0, cores=2) != figures.utilisation(1.0, 0.0, cores=2))  # NaN


class Histograms(unittest.TestCase):
    def test_buckets_summed_over_labels_and_quantiles_of_a_delta(self):
        before = {'lag_bucket{le="0.005"}': 1, 'lag_bucket{le="0.05"}': 2, 'lag_bucket{le="+Inf"}': 2}
        after = {'lag_bucket{le="0.005"}': 41, 'lag_bucket{le="0.05"}': 100, 'lag_bucket{le="+Inf"}': 102,
                 'lag_bucket{partition="1",le="0.05"}': 0, 'lag_count': 102, 'other_bucket{le="1"}': 7}
        first = figures.histogram_buckets(before, "lag")
        delta = figures.bucket_delta(first, figures.histogram_buckets(after, "lag"))
        self.assertEqual(delta, [(0.005, 40), (0.05, 98), (float("inf"), 100)])
        self.assertEqual(figures.bucket_quantile(delta, 0.4), 0.005)
        self.assertEqual(figures.bucket_quantile(delta, 0.5), 0.05)
        self.assertEqual(figures.bucket_quantile(delta, 0.99), float("inf"))
        self.assertTrue(math.isnan(figures.bucket_quantile([], 0.5)))


class LiveShares(unittest.TestCase):
    def test_the_pipeline_is_the_machine_less_the_broker_and_the_publisher(self):
        self.assertEqual(figures.less_publishing(577, 113, 36), 428)
        self.assertEqual(figures.less_publishing(100, 80, 40), 0.0)

    def test_the_machine_s_load_at_a_rate_and_the_live_event_s_budget(self):
        # 10a0fac, PostgreSQL run 1: C/2 = 3,438 events/s, publishing alone 195 µs an event, the drain less RabbitMQ
        # 251 µs: 77 % of two cores even with a live event as cheap as a drained one.
        self.assertAlmostEqual(figures.busy_at(3438, 195 + 251, 2), 0.7667, places=3)
        self.assertAlmostEqual(figures.busy_at(1000, 500, 1), 0.5)
        self.assertTrue(math.isnan(figures.busy_at(1000, 500, 0)))
        self.assertAlmostEqual(figures.live_budget_us(3438, 0.70, 195, 2), 212.2, places=1)
        self.assertAlmostEqual(figures.live_budget_us(1000, 0.5, 100, 1), 400)
        self.assertTrue(math.isnan(figures.live_budget_us(0, 0.7, 195, 2)))
        # At the budget the machine is exactly as busy as asked.
        self.assertAlmostEqual(figures.busy_at(3438, 195 + figures.live_budget_us(3438, 0.7, 195, 2), 2), 0.7)

    def test_the_floor_of_a_live_event_against_a_drained_one(self):
        # Publishing alone costing what a drained event does: a live event costs at least twice a drained one.
        self.assertAlmostEqual(figures.live_ratio_floor(400, 400), 2.0)
        self.assertAlmostEqual(figures.live_ratio_floor(380, 950), 3.5)
        self.assertAlmostEqual(figures.live_ratio_floor(500, 0), 1.0)
        self.assertTrue(math.isnan(figures.live_ratio_floor(0, 100)))

    def test_latency_bounded_throughput_is_the_highest_fraction_held_from_the_lowest_up(self):
        self.assertEqual(figures.latency_bounded_fraction({0.1: 29, 0.2: 37, 0.3: 40, 0.4: 178, 0.5: 348}), 0.3)
        # A higher fraction that holds the bound above one that does not is noise.
        self.assertEqual(figures.latency_bounded_fraction({0.5: 48, 0.1: 33, 0.2: 79}), 0.1)
        self.assertIsNone(figures.latency_bounded_fraction({0.1: 64, 0.2: 83, 0.5: 40}))
        self.assertIsNone(figures.latency_bounded_fraction({0.1: None, 0.2: 30}))
        self.assertEqual(figures.latency_bounded_fraction({0.1: 50}), 0.1)
        self.assertEqual(figures.latency_bounded_fraction({0.1: 30, 0.2: 40}, bound_ms=35), 0.1)

    def test_only_the_namespace_s_own_queues_are_picked(self):
        names = ["badgepipe.events.0", "bench-alone-7.events.1", "bench-alone-7.dead", "bench-alone-70.events.0",
                 "bench-alone-7.events.0"]
        self.assertEqual(figures.namespace_queues(names, "bench-alone-7"),
                         ["bench-alone-7.dead", "bench-alone-7.events.0", "bench-alone-7.events.1"])


    def test_fractions_of_the_capacity_and_their_labels(self):
        self.assertEqual([figures.fraction_label(f) for f in (0.5, 0.25, 1, 0.3, 0.1)],
                         ["C/2", "C/4", "C", "0.3 C", "C/10"])
        self.assertEqual(figures.capacity_fraction("0.25"), 0.25)
        for text in ("0", "-0.5", "1.01", "x"):
            with self.subTest(text=text), self.assertRaises(ValueError):
                figures.capacity_fraction(text)


if __name__ == "__main__":
    unittest.main()
