import AMQPClient
import BadgeCore
import BadgeDelivery
import BadgeStore

/// Everything a worker needs to run.
public struct WorkerConfiguration: Sendable {
    /// The heartbeat a worker asks the broker for when its AMQP URL names none, in seconds: RabbitMQ's
    /// recommended lowest value.
    ///
    /// A worker that is gone without closing its connection (its host lost, the network cut, the process frozen,
    /// or a container killed with its last packets dropped) keeps the single-active-consumer slot and the unacked
    /// messages of every partition queue it consumed until the broker gives up on it after two to three silent
    /// intervals: at 5 its partitions move to another worker within seconds, close to the lease TTL (5 s); at
    /// AMQPClient's default of 30, only after a minute or more.
    /// `?heartbeat=N` in the URL overrides it; values under 5 risk a busy broker dropping a live worker, whose
    /// unacked messages then count as a delivery.
    public static let defaultHeartbeatSeconds = 5
    /// See ``ingestionInterval``, in milliseconds.
    public static let defaultIngestionIntervalMilliseconds = 40
    /// See ``batchSize``.
    public static let defaultBatchSize = 128
    /// See ``apnsTopic``: an example, for a local sink only (with APNs credentials the deployment must name its
    /// app's bundle id).
    public static let exampleAPNsTopic = "com.example.app"
    /// See ``fcmProject``, when the credentials do not name one.
    public static let defaultFCMProject = "badgepipe"
    /// See ``sendConcurrency``.
    public static let defaultSendConcurrency = 32
    /// See ``deliveryRoundSize``.
    public static let defaultDeliveryRoundSize = 256
    /// See ``deliveryHeldBackPoll``, in milliseconds.
    public static let defaultDeliveryHeldBackPollMilliseconds = 500
    /// See ``deliveryRecordDelay``.
    public static let defaultDeliveryRecordDelayMilliseconds = 0

    /// The broker.
    public var amqp: AMQPConfiguration
    /// `postgres://…` or `sqlite:PATH`.
    public var databaseURL: String
    /// Where pushes go.
    public var delivery: DeliveryConfiguration
    /// `unseen` (default) or `unread`.
    public var badgePolicy: BadgePolicy
    /// APNs topic for devices registered without one.
    public var apnsTopic: String
    /// FCM project id in `/v1/projects/{project}/messages:send`.
    public var fcmProject: String
    /// The broker topology (partition count must match across the deployment).
    public var topology: Topology
    /// Unacked messages per partition consumer, at most (see ``maxBytesInFlight``).
    public var prefetch: UInt16
    /// The most bytes of message bodies the worker holds unacked, shared equally by the topology's partitions:
    /// each partition's prefetch count follows its messages' average size to stay within its share
    /// (`PrefetchBudget`). A body over the contract's 64 KiB is held in a file, not in memory, until its message is
    /// parked as `too_large` with it (one at a time per partition).
    public var maxBytesInFlight = WorkerConfiguration.defaultMaxBytesInFlight
    /// 64 MiB: with 8 partitions, 8 MiB each, 128 messages of the contract's largest body.
    public static let defaultMaxBytesInFlight = 64 << 20
    /// Most events in one database transaction.
    public var batchSize: Int
    /// The most work one ingestion transaction does, in rows (see `PartitionIngestion.weight(of:)`): a batch
    /// heavier than this is applied in several transactions. 128 events of the contract's largest
    /// (`notification_read` with 500 ids) make 64,128; 2,048 keeps each transaction well within the watchdog.
    /// It also bounds the rows one read-state event (read-all, opened, conversation read) changes per transaction:
    /// a user who reads 1,000,000 notifications at once is applied in chunks of this many (see
    /// `ApplyContext.readStateChunk`).
    public var maxTransactionWeight = 2048
    /// The least time between the starts of two of the worker's ingestion transactions while its partitions'
    /// batches are not full (see `TransactionGroupStateMachine`): partitions take their batches at that tick,
    /// together. Zero: a transaction starts as soon as a batch is there.
    public var ingestionInterval = Duration.milliseconds(WorkerConfiguration.defaultIngestionIntervalMilliseconds)
    /// How long a delivery record waits for those of the worker's other partitions, to be written together in one
    /// transaction (see `DeliveryRounds.record(_:)`): the pushes one ingestion transaction claims for several
    /// partitions go out at the same time, and so do their records. It adds this long at most to the time a push
    /// stays sent but not recorded. The ingestion tick's gathering moment: a tenth of ``ingestionInterval``, at
    /// most 2 ms; none without an interval (each record on its own).
    var recordGathering: Duration { .gatheringMoment(forInterval: ingestionInterval) }
    /// The most active devices a user keeps (see `ApplyContext.maxDevicesPerUser`).
    public var maxDevicesPerUser = ApplyContext.defaultMaxDevicesPerUser
    /// Most pushes in flight at once, per partition (one device's pushes always go one after another).
    public var sendConcurrency: Int
    /// Most pushes claimed by one delivery round (also the most a crash can leave sent but not recorded, per
    /// partition).
    public var deliveryRoundSize: Int
    /// How often a partition looks again at its outbox while it holds pushes held back: never attempted, not on
    /// their way, and not taken by its last claim (an earlier push of their device waits in another partition, or
    /// for a retry). Such pushes become due without anything the partition hears of. A partition with none held
    /// back does not poll: it wakes on new work and when its earliest retry is due (see `DeliveryStateMachine`).
    public var deliveryHeldBackPoll: Duration
    /// How long a delivery round's outcomes may wait to be recorded with the next claim; when no new pushes come
    /// in that time, they are recorded on their own. A push stays sent but not recorded (what a crash sends again,
    /// with the same `apns-id`) for its round plus this long. Zero by default: a round's outcomes are recorded as
    /// soon as it ends, with the next claim when new pushes are already waiting, on their own otherwise: the
    /// shorter a push stays sent but not recorded, the fewer alerts a crash sends twice.
    public var deliveryRecordDelay = Duration.milliseconds(WorkerConfiguration.defaultDeliveryRecordDelayMilliseconds)
    /// How long a worker's publisher of token feedback holds the entries it took (see `FeedbackPublisher`): an entry
    /// it took and did not publish (its broker session ended) is published by the next one, of any worker, after this.
    public var feedbackHold = Duration.seconds(30)
    /// Run on RabbitMQ 4.0–4.2 although its modulus-hash routing was not stable under Khepri (see `BrokerVersion`):
    /// for operators who know their broker runs Mnesia. Off by default: such a broker is refused.
    public var allowUnstableRouting = false
    /// Fleet mode (PostgreSQL): partitions are leased through the database and spread over the live workers.
    /// nil: a single node that consumes every partition.
    public var fleet: Fleet?

    /// Settings of fleet mode.
    public struct Fleet: Sendable {
        /// This worker's id, unique in the fleet.
        public var workerID: String
        /// A lease not renewed for this long is free for another worker: the failover time of a dead worker.
        public var leaseTTLMilliseconds: Int64

        /// The lease TTL unless the deployment says otherwise (`--lease-ttl`, `BADGEPIPE_LEASE_TTL_MS`).
        public static let defaultLeaseTTLMilliseconds: Int64 = 5000

        public init(workerID: String, leaseTTLMilliseconds: Int64 = Fleet.defaultLeaseTTLMilliseconds) {
            self.workerID = workerID
            self.leaseTTLMilliseconds = leaseTTLMilliseconds
        }
    }

    public init(
        amqp: AMQPConfiguration,
        databaseURL: String,
        delivery: DeliveryConfiguration = DeliveryConfiguration(),
        badgePolicy: BadgePolicy = .unseen,
        apnsTopic: String = WorkerConfiguration.exampleAPNsTopic,
        fcmProject: String = WorkerConfiguration.defaultFCMProject,
        topology: Topology = Topology(),
        prefetch: UInt16 = 256,
        batchSize: Int = WorkerConfiguration.defaultBatchSize,
        sendConcurrency: Int = WorkerConfiguration.defaultSendConcurrency,
        deliveryRoundSize: Int = WorkerConfiguration.defaultDeliveryRoundSize,
        deliveryHeldBackPoll: Duration = .milliseconds(WorkerConfiguration.defaultDeliveryHeldBackPollMilliseconds),
        fleet: Fleet? = nil
    ) {
        self.amqp = amqp
        self.databaseURL = databaseURL
        self.delivery = delivery
        self.badgePolicy = badgePolicy
        self.apnsTopic = apnsTopic
        self.fcmProject = fcmProject
        self.topology = topology
        self.prefetch = prefetch
        self.batchSize = batchSize
        self.sendConcurrency = sendConcurrency
        self.deliveryRoundSize = deliveryRoundSize
        self.deliveryHeldBackPoll = deliveryHeldBackPoll
        self.fleet = fleet
    }
}
