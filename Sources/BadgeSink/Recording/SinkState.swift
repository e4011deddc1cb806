import BadgeWire
import Foundation
import Metrics
import Synchronization

/// The sink's in-memory store: every recorded push and the active faults, safe to share between requests.
///
/// All state sits behind one `Mutex`; work that does not need it (JSON validation, encoding headers,
/// rendering JSON) happens outside the lock.
public final class SinkState: Sendable {
    /// The largest APNs body accepted, as real APNs: bigger ones get 413 `PayloadTooLarge`.
    public static let maximumAPNsPayloadBytes = 4096

    private struct State {
        var log: ReceivedPushLog
        var faults: FaultTable
        var waiters = PushWaiters()
        var nextSeq = 1
        /// `badgepipe_sink_pushes_total` by provider and status, made once each; keyed by the status shifted left
        /// by one, plus one for FCM.
        var counters: [Int: Counter] = [:]
    }

    private let state: Mutex<State>
    /// The device summaries, folded when read. Lock order: `devices`, then `state`.
    private let deviceTable = Mutex(DeviceTable())
    /// The most requests waiting at once.
    private let maxWaiters: Int
    /// The most `GET /events` streams open at once.
    let maxEventStreams: Int
    /// `GET /events` streams open now.
    private let openEventStreams = Mutex(0)
    /// Pushes recorded by ``recordUnlessFaulted(provider:token:headers:authorization:body:http2:refusal:sandbox:)``
    /// (answered in the channel pipeline rather than by the router).
    let recordedUnlessFaulted = Atomic<Int>(0)
    /// `badgepipe_sink_dropped_total`: deliveries dropped to stay within the caps.
    private let droppedCounter = Counter(label: "badgepipe_sink_dropped_total")
    /// `badgepipe_sink_kept_bytes`: the bytes the kept deliveries take, updated when `/stats` or `/metrics` is read.
    private let keptBytesGauge = Gauge(label: "badgepipe_sink_kept_bytes")

    /// Creates an empty store.
    /// - Parameters:
    ///   - randomSeed: The seed of the draws for faults with a `rate`; nil for a random seed.
    ///   - maxDeliveries: The most deliveries kept; the oldest are dropped beyond it.
    ///   - maxDeliveryBytes: The most bytes of deliveries kept; the oldest are dropped beyond it.
    ///   - maxWaiters: The most requests waiting at once (``wait(for:tokens:until:)``).
    ///   - maxEventStreams: The most `GET /events` streams open at once, counted apart from the requests.
    public init(
        randomSeed: UInt64? = nil, maxDeliveries: Int = 1_000_000,
        maxDeliveryBytes: Int = SinkConfiguration.defaultMaxDeliveryBytes,
        maxWaiters: Int = SinkConfiguration.defaultMaxWaiters,
        maxEventStreams: Int = SinkConfiguration.defaultMaxEventStreams
    ) {
        let seed = randomSeed ?? UInt64.random(in: .min ... .max)
        self.state = Mutex(
            State(
                log: ReceivedPushLog(capacity: maxDeliveries, byteCapacity: maxDeliveryBytes),
                faults: FaultTable(seed: seed)))
        self.maxWaiters = maxWaiters
        self.maxEventStreams = maxEventStreams
    }

    /// Creates an empty store with the caps of `configuration`.
    public convenience init(configuration: SinkConfiguration, randomSeed: UInt64? = nil) {
        self.init(
            randomSeed: randomSeed, maxDeliveries: configuration.maxDeliveries,
            maxDeliveryBytes: configuration.maxDeliveryBytes, maxWaiters: configuration.maxWaiters,
            maxEventStreams: configuration.maxEventStreams)
    }

    /// Records a push and decides its answer.
    ///
    /// The answer is `refusal` when given (the request's credentials were refused), else an error when the
    /// request is malformed (APNs: empty body → 400 `PayloadEmpty`, body over 4096 bytes → 413 `PayloadTooLarge`,
    /// no token → 400 `MissingDeviceToken`; FCM: no token → 400 `INVALID_ARGUMENT`), else the first active fault
    /// that matches and fires (translated for FCM), else 200.
    /// - Parameters:
    ///   - provider: The service the push is addressed to.
    ///   - token: The device token; for FCM, `message.token` from the body, or empty when it has none.
    ///   - headers: The request headers; names are lowercased. Credential headers (`authorization`,
    ///     `proxy-authorization`) are not kept.
    ///   - authorization: What the sink checked of the `authorization` header. When nil and `headers` has one, only
    ///     its scheme is recorded, as not verified.
    ///   - body: The request body as received.
    ///   - receivedAt: When it was received.
    ///   - http2: Whether it came over HTTP/2 (else HTTP/1.1).
    ///   - refusal: The status and reason to answer with instead of looking further.
    ///   - sandbox: For APNs, whether the push came to the sandbox path (`/sandbox/3/device/…`).
    /// - Returns: The answer to send, with the `seq` it was recorded under.
    public func record<Body: Collection<UInt8>>(
        provider: PushProvider,
        token: String,
        headers: [(name: String, value: String)],
        authorization: RecordedAuthorization? = nil,
        body: Body,
        receivedAt: Date = Date(),
        http2: Bool = false,
        refusal: (status: Int, reason: String)? = nil,
        sandbox: Bool = false
    ) -> PushAnswer {
        self.record(
            provider: provider, token: token, headers: headers, authorization: authorization, body: body,
            receivedAt: receivedAt, http2: http2, refusal: refusal, sandbox: sandbox, unlessFaulted: false)!
    }

    /// Records a push as ``record(provider:token:headers:authorization:body:receivedAt:http2:refusal:sandbox:)``
    /// does, but only while no fault is active: nil (and nothing recorded) when one is. `bodyIsJSON`: true when the
    /// caller has read the body as strict JSON already; nil to have it checked here.
    func recordUnlessFaulted<Body: Collection<UInt8>>(
        provider: PushProvider,
        token: String,
        headers: [(name: String, value: String)],
        authorization: RecordedAuthorization?,
        body: Body,
        bodyIsJSON: Bool? = nil,
        http2: Bool,
        refusal: (status: Int, reason: String)?,
        sandbox: Bool
    ) -> PushAnswer? {
        let answer = self.record(
            provider: provider, token: token, headers: headers, authorization: authorization, body: body,
            bodyIsJSON: bodyIsJSON, receivedAt: Date(), http2: http2, refusal: refusal, sandbox: sandbox,
            unlessFaulted: true)
        if answer != nil {
            self.recordedUnlessFaulted.add(1, ordering: .relaxed)
        }
        return answer
    }

    private func record<Body: Collection<UInt8>>(
        provider: PushProvider,
        token: String,
        headers: [(name: String, value: String)],
        authorization: RecordedAuthorization?,
        body: Body,
        bodyIsJSON: Bool? = nil,
        receivedAt: Date,
        http2: Bool,
        refusal: (status: Int, reason: String)?,
        sandbox: Bool,
        unlessFaulted: Bool
    ) -> PushAnswer? {
        let authorization =
            authorization
            ?? headers.first { Self.isAuthorization($0.name) }.map {
                RecordedAuthorization.unverified($0.value)
            }
        let bodyIsJSON = bodyIsJSON ?? JSONValue.isWellFormed(body)
        let (blob, headersLength) = ReceivedPushBlob.encode(headers: headers, body: body)
        let milliseconds = Timestamp.milliseconds(of: receivedAt)
        let rejection =
            refusal.map { ($0.status, Optional($0.reason)) }
            ?? Self.rejection(provider: provider, token: token, bodySize: body.count)
        let environment: ReceivedPushRecord.Environment =
            provider == .fcm ? .none : sandbox ? .sandbox : .production
        let recorded = self.state.withLock { state -> Recorded? in
            if unlessFaulted, !state.faults.isEmpty {
                return nil
            }
            var status = 200
            var reason: String?
            var fault: Fault?
            if let rejection {
                (status, reason) = rejection
            } else if let fired = state.faults.fire(token: token) {
                fault = fired
                if let connection = fired.connection {
                    (status, reason) = (0, connection == .close ? "ConnectionClosed" : "GoAway")
                } else if let faultStatus = fired.status {
                    switch provider {
                    case .apns:
                        (status, reason) = (faultStatus, fired.reason)
                    case .fcm:
                        let error = FCMError(fault: faultStatus, reason: fired.reason ?? "")
                        (status, reason) = (error.status, error.errorCode)
                    }
                }
            }
            let seq = state.nextSeq
            state.nextSeq += 1
            let dropped = state.log.append(
                seq: seq,
                provider: provider,
                token: token,
                blob: blob,
                headersLength: headersLength,
                bodyIsJSON: bodyIsJSON,
                status: status,
                reason: reason,
                authorization: authorization,
                receivedAtMilliseconds: milliseconds,
                httpVersion: http2 ? .http2 : .http1,
                environment: environment,
                delayMilliseconds: fault?.delayMilliseconds ?? 0
            )
            let key = status << 1 | (provider == .fcm ? 1 : 0)
            let counter: Counter
            if let made = state.counters[key] {
                counter = made
            } else {
                counter = Counter(
                    label: "badgepipe_sink_pushes_total",
                    dimensions: [("provider", provider.rawValue), ("status", "\(status)")])
                state.counters[key] = counter
            }
            let woken = state.waiters.isEmpty ? [] : state.waiters.wake(token: token)
            return Recorded(
                seq: seq, status: status, reason: reason, counter: counter, fault: fault, dropped: dropped,
                woken: woken)
        }
        guard let recorded else { return nil }
        recorded.counter.increment()
        if recorded.dropped > 0 {
            self.droppedCounter.increment(by: recorded.dropped)
        }
        for continuation in recorded.woken {
            continuation.resume(returning: true)
        }
        return PushAnswer(
            seq: recorded.seq,
            provider: provider,
            status: recorded.status,
            reason: recorded.reason,
            receivedAt: Timestamp(millisecondsSinceEpoch: milliseconds).date,
            delayMilliseconds: recorded.fault?.delayMilliseconds ?? 0,
            connection: recorded.fault?.connection
        )
    }

    /// What ``record(provider:token:headers:authorization:body:receivedAt:http2:refusal:sandbox:)`` decided under
    /// the lock.
    private struct Recorded: Sendable {
        var seq: Int
        var status: Int
        var reason: String?
        var counter: Counter
        var fault: Fault?
        var dropped: Int
        var woken: [CheckedContinuation<Bool, Never>]
    }

    /// The recorded pushes, oldest first.
    /// - Parameters:
    ///   - token: Only this token's; nil for all.
    ///   - after: Only those with a greater `seq`; nil for all.
    ///   - limit: At most this many (the oldest that match); nil for all.
    public func receivedPushes(token: String? = nil, after: Int? = nil, limit: Int? = nil) -> [ReceivedPush] {
        self.snapshot(DeliveryFilter(tokens: token.map { [$0] }, after: after, limit: limit)).receivedPushes
    }

    /// The recorded pushes that `filter` keeps, oldest first.
    public func receivedPushes(_ filter: DeliveryFilter) -> [ReceivedPush] {
        self.snapshot(filter).receivedPushes
    }

    /// The body of `GET /deliveries`: `{"deliveries": [...]}` with the same filters as
    /// ``receivedPushes(token:after:limit:)``.
    public func receivedPushesJSON(_ filter: DeliveryFilter) -> [UInt8] {
        self.snapshot(filter).json
    }

    /// The body of `GET /deliveries` with the filters `token`, `after` and `limit`.
    public func receivedPushesJSON(token: String? = nil, after: Int? = nil, limit: Int? = nil) -> [UInt8] {
        self.snapshot(DeliveryFilter(tokens: token.map { [$0] }, after: after, limit: limit)).json
    }

    /// How many pushes are recorded.
    public var count: Int {
        self.state.withLock { $0.log.count }
    }

    /// The `seq` the next push will get.
    public var nextSeq: Int {
        self.state.withLock { $0.nextSeq }
    }

    /// Forgets every delivery and resets the counters; `seq` goes on from where it was.
    /// - Returns: How many deliveries were forgotten.
    @discardableResult
    public func clear() -> Int {
        let old = self.deviceTable.withLock { devices -> ReceivedPushLog in
            devices.remove(tokens: nil)
            return self.state.withLock { state -> ReceivedPushLog in
                let old = state.log
                state.log = ReceivedPushLog(capacity: old.capacity, byteCapacity: old.byteCapacity)
                return old
            }
        }
        // The old store is freed here, outside the lock.
        return old.count
    }

    /// Forgets the deliveries and the device summaries of `tokens` only, and takes those deliveries out of the
    /// counters.
    /// - Returns: How many deliveries were forgotten.
    @discardableResult
    public func clear(tokens: Set<String>) -> Int {
        self.deviceTable.withLock { devices in
            devices.remove(tokens: tokens)
            return self.state.withLock { $0.log.remove(tokens: tokens) }
        }
    }

    /// Adds a fault after the active ones.
    public func addFault(_ fault: Fault) {
        self.state.withLock { $0.faults.add(fault) }
    }

    /// Removes every fault.
    /// - Returns: How many were active.
    @discardableResult
    public func clearFaults() -> Int {
        self.state.withLock { $0.faults.removeAll() }
    }

    /// The active faults in insertion order; `times` is how many more pushes each fires for.
    public func faults() -> [Fault] {
        self.state.withLock { $0.faults.all }
    }

    /// The counters of the recorded pushes.
    public func stats() -> SinkStats {
        let stats = self.state.withLock { $0.log.stats }
        self.keptBytesGauge.record(stats.keptBytes)
        return stats
    }

    /// The devices that have had a push, in the order of their first.
    public func devices() -> [DeviceSummary] {
        self.foldedDevices { $0.devices }
    }

    /// The summary of `token`; nil when it has had no push.
    public func device(_ token: String) -> DeviceSummary? {
        self.foldedDevices { $0.device(token) }
    }

    /// Waits until a push to one of `tokens` (any token when nil) is recorded after `seq`, or until `deadline`.
    ///
    /// The request is parked, not polled: recording a push wakes it. Returns at once when such a push came
    /// already (any push after `seq` counts, whatever its token: the caller checks again).
    /// - Returns: Whether a push came; false at the deadline or on cancellation.
    /// - Throws: ``SinkError`` `too_many_waiters` (503) when `maxWaiters` requests wait already.
    public func wait(
        for seq: Int, tokens: Set<String>?, until deadline: ContinuousClock.Instant
    ) async throws(SinkError) -> Bool {
        try await wait(for: seq, tokens: tokens, until: deadline, pool: .requests)
    }

    /// Opens a `GET /events` stream: false when ``maxEventStreams`` are open already. Each opened stream is
    /// closed with ``closeEventStream()`` (by its `EventStreamSlot`).
    func openEventStream() -> Bool {
        openEventStreams.withLock { open in
            guard open < maxEventStreams else { return false }
            open += 1
            return true
        }
    }

    /// A `GET /events` stream ended.
    func closeEventStream() {
        openEventStreams.withLock { $0 -= 1 }
    }

    /// How many `GET /events` streams are open now.
    var eventStreamsOpen: Int {
        openEventStreams.withLock { $0 }
    }

    /// ``wait(for:tokens:until:)`` in `pool`: the streams wait under their own bound.
    func wait(
        for seq: Int, tokens: Set<String>?, until deadline: ContinuousClock.Instant, pool: PushWaiters.Pool
    ) async throws(SinkError) -> Bool {
        let limit = pool == .requests ? self.maxWaiters : self.maxEventStreams
        guard let id = self.state.withLock({ $0.waiters.reserve(limit: limit, pool: pool) }) else {
            throw SinkError(
                code: .tooManyWaiters, message: "\(limit) requests are waiting already", httpStatus: 503)
        }
        let came = await withTaskGroup(of: Void.self) { timer -> Bool in
            timer.addTask {
                guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return }
                self.expire(id)
            }
            let came = await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                    let now: Bool? = self.state.withLock { state in
                        if state.nextSeq - 1 > seq {
                            return true
                        }
                        return state.waiters.park(id, tokens: tokens, continuation) ? nil : false
                    }
                    if let now {
                        continuation.resume(returning: now)
                    }
                }
            } onCancel: {
                self.expire(id)
            }
            timer.cancelAll()
            return came
        }
        self.state.withLock { $0.waiters.finish(id) }
        return came
    }

    /// Waits (see ``wait(for:tokens:until:)``) until `check` holds or `deadline` passes, checking it once at
    /// first and again after each push to `tokens`.
    /// - Returns: The last value `check` returned, and whether it held.
    public func wait<Value: Sendable>(
        tokens: Set<String>?, until deadline: ContinuousClock.Instant,
        _ check: () -> (value: Value, holds: Bool)
    ) async throws(SinkError) -> (value: Value, held: Bool) {
        while true {
            let seen = self.nextSeq - 1
            let result = check()
            if result.holds || ContinuousClock.now >= deadline || Task.isCancelled {
                return (result.value, result.holds)
            }
            _ = try await self.wait(for: seen, tokens: tokens, until: deadline)
        }
    }

    /// How many requests are waiting.
    public var waiting: Int {
        self.state.withLock { $0.waiters.active }
    }

    /// How many `GET /events` streams are parked between pushes (counted apart from ``waiting``).
    var streamsWaiting: Int {
        self.state.withLock { $0.waiters.activeStreams }
    }

    private func expire(_ id: UInt64) {
        self.state.withLock { $0.waiters.expire(id) }?.resume(returning: false)
    }

    /// `read` of the device table, once every recorded push is folded in. The pushes are folded outside the
    /// store's lock (the device table has its own), so recording goes on meanwhile.
    private func foldedDevices<Value>(_ read: (DeviceTable) -> Value) -> Value {
        self.deviceTable.withLock { devices in
            let snapshot = self.state.withLock { $0.log.snapshotIncludingDropped(after: devices.foldedThrough) }
            devices.fold(snapshot)
            return read(devices)
        }
    }

    func snapshot(_ filter: DeliveryFilter) -> ReceivedPushSnapshot {
        let indexed = self.state.withLock { state in
            state.log.snapshot(
                tokens: filter.tokens, after: filter.after, limit: filter.isNarrowerThanIndexes ? nil : filter.limit)
        }
        return indexed.filtered(by: filter)
    }

    /// Whether `name` is `authorization` in any case (compared without making a lowercased copy).
    private static func isAuthorization(_ name: String) -> Bool {
        name.utf8.count == 13 && name.utf8.elementsEqual("authorization".utf8) { $0 | 0x20 == $1 }
    }

    private static func rejection(provider: PushProvider, token: String, bodySize: Int) -> (Int, String?)? {
        switch provider {
        case .apns:
            if token.isEmpty {
                return (400, "MissingDeviceToken")
            }
            if bodySize == 0 {
                return (400, "PayloadEmpty")
            }
            if bodySize > Self.maximumAPNsPayloadBytes {
                return (413, "PayloadTooLarge")
            }
            return nil
        case .fcm:
            return token.isEmpty ? (400, "INVALID_ARGUMENT") : nil
        }
    }
}
