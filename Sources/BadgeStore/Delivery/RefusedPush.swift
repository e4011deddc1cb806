/// An outbox row the code cannot read (a provider, event type, kind or environment it does not know, an alert whose
/// event is missing or not a valid event, a NULL or mistyped value where one is expected). A claim that meets one
/// moves it, in its own transaction, into `refused_pushes` (its id, user, token, partition, every column as text,
/// the reason and the database's time) and deletes it from the outbox, instead of failing for ever; the claim goes
/// on with the other rows and returns the refusals in ``ClaimedPushes/refused``, for the caller to count and log.
public struct RefusedPush: Sendable, Equatable {
    /// Why a row was refused: a bounded code, fit for a metric label.
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        /// The reason's name, e.g. `unknown_provider`.
        public let rawValue: String

        /// A reason by name.
        public init(_ rawValue: String) {
            self.rawValue = rawValue
        }

        public var description: String { rawValue }

        /// `provider` is neither `apns` nor `fcm`.
        public static let unknownProvider = Reason("unknown_provider")
        /// `event_type` is not a type of the contract this code knows.
        public static let unknownEventType = Reason("unknown_event_type")
        /// `kind` is neither `alert` nor `badge`.
        public static let unknownKind = Reason("unknown_kind")
        /// `environment` is neither `production` nor `sandbox`.
        public static let unknownEnvironment = Reason("unknown_environment")
        /// An alert's `event_json` is not JSON, or not a valid event.
        public static let badEvent = Reason("bad_event")
        /// NULL where a value is expected (an alert without its event, say).
        public static let missingValue = Reason("missing_value")
        /// A value that is not of its column's type (text in a number column, on SQLite).
        public static let badValue = Reason("bad_value")
    }

    /// The row's outbox id.
    public var outboxID: Int64
    /// The row's user, when it could be read.
    public var user: String?
    /// The row's device token, when it could be read.
    public var token: String?
    /// The row's partition, when it has one.
    public var partition: Int?
    /// Why it was refused.
    public var reason: Reason
    /// What exactly could not be read, in a sentence.
    public var detail: String

    /// Creates a refusal.
    public init(outboxID: Int64, user: String?, token: String?, partition: Int?, reason: Reason, detail: String) {
        self.outboxID = outboxID
        self.user = user
        self.token = token
        self.partition = partition
        self.reason = reason
        self.detail = detail
    }
}
