import BadgeCore
import BadgeModel
import BadgeSink
import BadgeWire
import Foundation

/// What a fleet run delivered, checked against the reference model.
struct FleetReport: CustomStringConvertible {
    var eventsPublished = 0
    var republished = 0
    var effectsChecked = 0
    var lostEffects: [String] = []
    var badgeMismatches: [String] = []
    var orderViolations: [String] = []
    var duplicateAlerts = 0
    var duplicatesWithNewID: [String] = []
    /// The alerts that arrived more than once (`event|token`), so that a failed run names them.
    var duplicatedKeys: [String] = []
    var deadLettered = 0
    var longestGap: Duration = .zero
    /// The push that ended the longest gap: its token, its `apns-id` or event, and when it arrived, counted from
    /// the first push (so that a late straggler can be told from a pause in the middle of the run).
    var afterLongestGap = ""
    /// The longest a device waited between a push the sink refused (a 5xx or 429: tried again later) and the next
    /// attempt at it (a device's pushes go one at a time, so that is the retry), with the device's token: at most
    /// the retry schedule's largest delay and a lease handover, whichever worker's clock scheduled it.
    var longestRetryWait: Duration = .zero
    var longestRetryWaitToken = ""
    /// Refused attempts (5xx or 429) the sink recorded.
    var refusedAttempts = 0
    var faults = 0
    var workerRestarts = 0
    /// Partitions leased by each worker at the end, fewest first.
    var partitionsPerWorker: [Int] = []
    /// With a sink outage: messages the broker still held, and events the database had processed, just before the
    /// sink recovered.
    var queuedAtOutageEnd: Int?
    var processedAtOutageEnd: Int?
    /// With a sink outage, just before the sink recovered: the outbox's rows (counted in the database), and what
    /// the workers' gauges reported of it (`badgepipe_outbox_depth` summed over partitions and workers, the largest
    /// `badgepipe_outbox_oldest_age_seconds`).
    var outboxAtOutageEnd: (rows: Int, reportedDepth: Double, reportedOldestAge: Double)?
    /// Rows left in `outbox_events` once the fleet was quiet (an alert's event goes with its last outbox row).
    var alertEventsLeft = 0
    /// The first accepted alert push of each event, by event id.
    var alertArrivals: [String: Date] = [:]

    var description: String {
        "events published \(eventsPublished) (\(republished) re-published), effects checked \(effectsChecked), "
            + "lost \(lostEffects.count), wrong last badge \(badgeMismatches.count), "
            + "order violations \(orderViolations.count), duplicate alerts \(duplicateAlerts) "
            + "(with a new apns-id: \(duplicatesWithNewID.count))"
            + (duplicatedKeys.isEmpty ? "" : " \(duplicatedKeys.prefix(10))")
            + ", dead-lettered \(deadLettered), faults \(faults), "
            + "longest gap between pushes \(longestGap) (ended by \(afterLongestGap)), "
            + "refused attempts \(refusedAttempts), longest wait for a retry \(longestRetryWait) "
            + "(\(longestRetryWaitToken.prefix(8))), worker self-restarts \(workerRestarts), "
            + "partitions per worker \(partitionsPerWorker), alert events left \(alertEventsLeft)"
            + (queuedAtOutageEnd.map { ", at the outage's end: queued \($0)" } ?? "")
            + (processedAtOutageEnd.map { ", processed \($0)" } ?? "")
            + (outboxAtOutageEnd.map {
                ", outbox \($0.rows) rows, reported depth \(Int($0.reportedDepth)), oldest \(Int($0.reportedOldestAge)) s"
            } ?? "")
    }

    /// Checks the sink's deliveries against the model of `steps` (the order they were published in).
    static func check(steps: [FleetScript.Step], deliveries: [ReceivedPush]) -> FleetReport {
        var model = InboxModel(policy: .unseen)
        var expectedAlerts: [String: Int] = [:]  // "event|token"
        for step in steps {
            for push in model.apply(step.event).pushes where push.kind.isAlert {
                expectedAlerts["\(push.eventID)|\(push.token)", default: 0] += 1
            }
        }
        var report = FleetReport()
        report.eventsPublished = steps.count

        // Per token: from each refused attempt to the next attempt, whatever its answer.
        var refusedAt: [String: Date] = [:]
        for delivery in deliveries.sorted(by: { $0.receivedAt < $1.receivedAt }) {
            if let refused = refusedAt.removeValue(forKey: delivery.token) {
                let wait = Duration.milliseconds(Int64(delivery.receivedAt.timeIntervalSince(refused) * 1000))
                if wait > report.longestRetryWait {
                    report.longestRetryWait = wait
                    report.longestRetryWaitToken = delivery.token
                }
            }
            if delivery.status == 429 || delivery.status >= 500 {
                refusedAt[delivery.token] = delivery.receivedAt
                report.refusedAttempts += 1
            }
        }

        // Per token: accepted pushes in arrival order.
        var perToken: [String: [(payload: JSONValue, key: String, apnsID: String?, at: Date)]] = [:]
        var arrivals: [(at: Date, what: String)] = []
        for delivery in deliveries where delivery.status == 200 {
            guard var json = try? JSONValue.parse(delivery.body) else { continue }
            var apnsID = delivery.headers["apns-id"]
            if delivery.provider == .fcm {
                json = json["message"]?["apns"]?["payload"] ?? .null
                apnsID = nil
            }
            let key: String
            if let apnsID {
                key = apnsID
            } else if let event = json["event_id"]?.stringValue {
                key = "alert:\(event)"
            } else {
                key = "badge:\(json["badge_version"]?.int64Value ?? -1)"
            }
            if let event = json["event_id"]?.stringValue {
                report.alertArrivals[event] = min(report.alertArrivals[event] ?? .distantFuture, delivery.receivedAt)
            }
            perToken[delivery.token, default: []].append((json, key, apnsID, delivery.receivedAt))
            arrivals.append((delivery.receivedAt, "\(delivery.token) \(key)"))
        }
        arrivals.sort { $0.at < $1.at }
        for (earlier, later) in zip(arrivals, arrivals.dropFirst()) {
            let gap = Duration.milliseconds(Int64(later.at.timeIntervalSince(earlier.at) * 1000))
            if gap > report.longestGap {
                report.longestGap = gap
                let sinceFirst = Int(later.at.timeIntervalSince(arrivals[0].at) * 1000)
                report.afterLongestGap = "\(later.what) at \(sinceFirst) ms"
            }
        }

        var gotAlerts: [String: [String?]] = [:]
        var alertTimes: [String: [Date]] = [:]
        for (token, pushes) in perToken {
            var seenKeys: Set<String> = []
            var highest: Int64 = -1
            for push in pushes {
                let version = push.payload["badge_version"]?.int64Value ?? -1
                if let event = push.payload["event_id"]?.stringValue {
                    gotAlerts["\(event)|\(token)", default: []].append(push.apnsID)
                    alertTimes["\(event)|\(token)", default: []].append(push.at)
                }
                if !seenKeys.insert(push.key).inserted { continue }  // a re-send: same apns-id
                if version <= highest {
                    report.orderViolations.append("\(token): version \(version) after \(highest)")
                }
                highest = max(highest, version)
            }
        }
        for (key, count) in expectedAlerts {
            report.effectsChecked += 1
            let got = gotAlerts[key] ?? []
            if got.count < count { report.lostEffects.append(key) }
            if got.count > count {
                report.duplicateAlerts += got.count - count
                // When each copy arrived, by the wall clock the workers' logs use.
                let format = ISO8601DateFormatter()
                format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                let times = (alertTimes[key] ?? []).map { format.string(from: $0) }
                report.duplicatedKeys.append("\(key) at \(times)")
                if Set(got.map { $0 ?? "" }).count > 1 { report.duplicatesWithNewID.append(key) }
            }
        }
        for key in gotAlerts.keys where expectedAlerts[key] == nil {
            report.lostEffects.append("unexpected alert \(key)")
        }
        // The last push to every active device carries the user's current badge.
        for user in Set(steps.map(\.event.recipient)) {
            let badge = model.badge(of: user)
            for device in model.activeDevices(of: user) {
                report.effectsChecked += 1
                let last = perToken[device.token]?.last?.payload["aps"]?["badge"]?.int64Value
                if last != Int64(badge) {
                    // The last few arrivals, to tell a late push from a missing one.
                    let tail = (perToken[device.token] ?? []).suffix(4).map { push in
                        "v\(push.payload["badge_version"]?.int64Value ?? -1) badge "
                            + "\(push.payload["aps"]?["badge"]?.int64Value ?? -1) \(push.key.suffix(12)) "
                            + "at \(push.at.timeIntervalSince1970)"
                    }
                    report.badgeMismatches.append(
                        "\(device.token): last badge \(last.map(String.init) ?? "none"), model \(badge); "
                            + "last arrivals: \(tail)")
                }
            }
        }
        return report
    }

    /// After a fault at `fault`: how long until the first alert of an event published after it arrived, and the
    /// slowest alert (publish to push) of the events published in the `window` after it and in the `window` before
    /// it, as a line for the log.
    func timing(
        after fault: Date, window: TimeInterval, steps: [FleetScript.Step], times: PublishTimes, name: String
    ) -> String {
        var firstAfter: TimeInterval?
        var slowestAfter = 0.0
        var slowestBefore = 0.0
        var countAfter = 0
        // A duplicate publish shares its event's id and alert: only each event's first publish is timed.
        for (index, step) in steps.enumerated() where !step.isDuplicate {
            guard let published = times[index], let arrived = alertArrivals[step.event.id] else { continue }
            let latency = arrived.timeIntervalSince(published)
            if published >= fault {
                let sinceFault = arrived.timeIntervalSince(fault)
                firstAfter = min(firstAfter ?? sinceFault, sinceFault)
                if published < fault + window {
                    slowestAfter = max(slowestAfter, latency)
                    countAfter += 1
                }
            } else if published >= fault - window {
                slowestBefore = max(slowestBefore, latency)
            }
        }
        return String(
            format: "%@: first push of an event published after it %.3f seconds, slowest alert of the %d published "
                + "in the %.0f s after it %.3f seconds (in the %.0f s before: %.3f seconds)",
            name, firstAfter ?? -1, countAfter, window, slowestAfter, window, slowestBefore)
    }
}
