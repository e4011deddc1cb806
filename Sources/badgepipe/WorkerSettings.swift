import BadgeCore
import BadgeDelivery
import BadgeStore
import BadgeWorker

/// The settings table: every setting of `badgepipe worker` (and the broker, database, policy and log settings the
/// other commands share with it), each written once with its flag, its environment variable, its default, its
/// bounds and what it is for. The options are declared from it (`@Option(name: S.optionName, help: S.help)`), their
/// help is made from it, and their values are read through it, so a default appears in one place: here, or in the
/// library constant this names. docs/configuration.md restates the table for readers; `SettingsTests` checks that
/// it says what the worker's help says.
enum WorkerSettings {
    // MARK: The broker, the database, the log (shared by several commands)

    /// `--amqp-url`.
    static let amqpURL = TextSetting(
        flag: "amqp-url", variable: "BADGEPIPE_AMQP_URL", defaultValue: "amqp://guest:guest@127.0.0.1:5672/%2F",
        summary: "Broker URL",
        note: """
            for a cluster, one URL per node separated by commas (amqp://u:p@rabbit-1,amqp://u:p@rabbit-2,\
            amqp://u:p@rabbit-3): clients connect to one and move to the next when it is lost
            """)
    /// `--namespace`.
    static let namespace = TextSetting(
        flag: "namespace", variable: "BADGEPIPE_NAMESPACE", defaultValue: Topology.defaultNamespace,
        summary: "Prefix of every broker name", note: "the workers and commands of one deployment share it")
    /// `--database-url`.
    static let databaseURL = TextSetting(
        flag: "database-url", variable: "BADGEPIPE_DATABASE_URL", defaultValue: "sqlite:badgepipe.sqlite",
        summary: "postgres://… or sqlite:PATH")
    /// `--badge-policy`.
    static let badgePolicy = TextSetting(
        flag: "badge-policy", variable: "BADGEPIPE_BADGE_POLICY", defaultValue: BadgePolicy.unseen.rawValue,
        summary: "unseen or unread")
    /// `--log-level`.
    static let logLevel = TextSetting(
        flag: "log-level", variable: "BADGEPIPE_LOG_LEVEL", defaultValue: "info",
        summary: "trace, debug, info, warning, error")

    // MARK: Providers

    /// `--apns-url`: optional, since a provider given neither a URL nor credentials is not used.
    static let apnsURL = TextSetting(
        flag: "apns-url", variable: "BADGEPIPE_APNS_URL", defaultValue: nil,
        defaultText: DeliveryConfiguration.appleAPNsURL, summary: "APNs URL for production devices")
    /// `--apns-sandbox-url`.
    static let apnsSandboxURL = TextSetting(
        flag: "apns-sandbox-url", variable: "BADGEPIPE_APNS_SANDBOX_URL", defaultValue: nil,
        defaultText: "\(DeliveryConfiguration.appleAPNsSandboxURL), or --apns-url when only that is set to a host "
            + "other than Apple's",
        summary: "APNs URL for sandbox devices", discussion: "A local sink serves both environments.")
    /// `--apns-key-file`.
    static let apnsKeyFile = TextSetting(
        flag: "apns-key-file", variable: "BADGEPIPE_APNS_KEY_FILE", defaultValue: nil,
        summary: "APNs token-auth key, a .p8 file")
    /// `--apns-key-id`.
    static let apnsKeyID = TextSetting(
        flag: "apns-key-id", variable: "BADGEPIPE_APNS_KEY_ID", defaultValue: nil, summary: "The .p8 key's id")
    /// `--apns-team-id`.
    static let apnsTeamID = TextSetting(
        flag: "apns-team-id", variable: "BADGEPIPE_APNS_TEAM_ID", defaultValue: nil,
        summary: "Apple developer team id")
    /// `--apns-cert-file`.
    static let apnsCertFile = TextSetting(
        flag: "apns-cert-file", variable: "BADGEPIPE_APNS_CERT_FILE", defaultValue: nil,
        summary: "APNs client certificate, PEM, instead of a key")
    /// `--apns-cert-key-file`.
    static let apnsCertKeyFile = TextSetting(
        flag: "apns-cert-key-file", variable: "BADGEPIPE_APNS_CERT_KEY_FILE", defaultValue: nil,
        summary: "The client certificate's private key, PEM")
    /// `--apns-topic`.
    static let apnsTopic = TextSetting(
        flag: "apns-topic", variable: "BADGEPIPE_APNS_TOPIC", defaultValue: WorkerConfiguration.exampleAPNsTopic,
        summary: "Default APNs topic, your app's bundle id",
        note: "for a local sink; required with APNs credentials")
    /// `--fcm-url`: optional, as `--apns-url` is.
    static let fcmURL = TextSetting(
        flag: "fcm-url", variable: "BADGEPIPE_FCM_URL", defaultValue: nil,
        defaultText: DeliveryConfiguration.googleFCMURL, summary: "FCM v1 base URL")
    /// `--fcm-credentials-file`.
    static let fcmCredentialsFile = TextSetting(
        flag: "fcm-credentials-file", variable: "BADGEPIPE_FCM_CREDENTIALS_FILE", defaultValue: nil,
        summary: "FCM service-account JSON file")
    /// `--fcm-project`.
    static let fcmProject = TextSetting(
        flag: "fcm-project", variable: "BADGEPIPE_FCM_PROJECT", defaultValue: nil,
        defaultText: "the credentials file's, else \(WorkerConfiguration.defaultFCMProject)", summary: "FCM project")
    /// `--apps-file`.
    static let appsFile = TextSetting(
        flag: "apps-file", variable: "BADGEPIPE_APPS_FILE", defaultValue: nil,
        summary: "The apps this deployment serves, a YAML file, instead of the single-app settings",
        discussion: """
            Each app with its APNs key or certificate, team and topics, and/or its FCM service account; see the \
            README's Several apps. The provider URLs still apply to every app.
            """)
    /// `--ca-file`.
    static let caFile = TextSetting(
        flag: "ca-file", variable: "BADGEPIPE_CA_FILE", defaultValue: nil,
        summary: "Extra trusted root certificates, PEM, e.g. a test sink's")
    /// `--provider-connections`.
    static let providerConnections = IntegerSetting(
        flag: "provider-connections", variable: "BADGEPIPE_PROVIDER_CONNECTIONS",
        defaultValue: DeliveryConfiguration.defaultClientsPerProvider, range: 1...64,
        summary: "HTTP/2 connections per provider host")
    /// `--provider-timeout`.
    static let providerTimeout = IntegerSetting(
        flag: "provider-timeout", variable: "BADGEPIPE_PROVIDER_TIMEOUT_MS",
        defaultValue: DeliveryConfiguration.defaultRequestTimeoutMilliseconds, range: 100...300_000,
        summary: "Milliseconds a provider request may take")

    // MARK: Ingestion and delivery

    /// `--partitions`.
    static let partitions = IntegerSetting(
        flag: "partitions", variable: "BADGEPIPE_PARTITIONS", defaultValue: Topology.defaultPartitions,
        range: 1...1024, summary: "Partition queues", note: "the same across the deployment")
    /// `--batch-size`.
    static let batchSize = IntegerSetting(
        flag: "batch-size", variable: "BADGEPIPE_BATCH_SIZE", defaultValue: WorkerConfiguration.defaultBatchSize,
        range: 1...10_000, summary: "Events per database transaction")
    /// `--ingestion-interval`.
    static let ingestionInterval = IntegerSetting(
        flag: "ingestion-interval", variable: "BADGEPIPE_INGESTION_INTERVAL_MS",
        defaultValue: WorkerConfiguration.defaultIngestionIntervalMilliseconds, range: 0...1000,
        summary: "Least milliseconds between two ingestion transactions of the worker while batches are not full",
        note: "0: each as soon as a batch is there")
    /// `--event-loops`. One event-loop thread per worker by default: a worker's network work (PostgreSQL, the
    /// providers, the operations listener) is small next to what the machine's other processes do, and a fleet
    /// scales by processes; with one loop thread instead of one per core, a worker wakes fewer threads per event
    /// (the figures are in `docs/performance.md`).
    static let eventLoops = IntegerSetting(
        flag: "event-loops", variable: "BADGEPIPE_EVENT_LOOPS", defaultValue: 1, range: 1...64,
        summary: "Event-loop threads of the worker's network clients", note: "scale out with more workers")
    /// `--max-devices-per-user`.
    static let maxDevicesPerUser = IntegerSetting(
        flag: "max-devices-per-user", variable: "BADGEPIPE_MAX_DEVICES_PER_USER",
        defaultValue: ApplyContext.defaultMaxDevicesPerUser, range: 1...10_000,
        summary: "Active devices a user keeps; a registration beyond it drops the one registered longest ago")
    /// `--max-mib-in-flight`.
    static let maxMiBInFlight = IntegerSetting(
        flag: "max-mib-in-flight", variable: "BADGEPIPE_MAX_MIB_IN_FLIGHT",
        defaultValue: WorkerConfiguration.defaultMaxBytesInFlight >> 20, range: 1...65_536,
        summary: """
            Message bytes a worker holds unacked at most, in MiB, shared by its partitions: each partition's \
            prefetch follows its messages' size
            """)
    /// `--send-concurrency`.
    static let sendConcurrency = IntegerSetting(
        flag: "send-concurrency", variable: "BADGEPIPE_SEND_CONCURRENCY",
        defaultValue: WorkerConfiguration.defaultSendConcurrency, range: 1...1024,
        summary: "Pushes in flight at once per partition")
    /// `--delivery-round-size`.
    static let deliveryRoundSize = IntegerSetting(
        flag: "delivery-round-size", variable: "BADGEPIPE_DELIVERY_ROUND_SIZE",
        defaultValue: WorkerConfiguration.defaultDeliveryRoundSize, range: 1...10_000,
        summary: """
            Most pushes one delivery round claims, and so the most a crash can leave sent but not recorded per \
            partition
            """)
    /// `--delivery-held-back-poll`.
    static let deliveryHeldBackPoll = IntegerSetting(
        flag: "delivery-held-back-poll", variable: "BADGEPIPE_DELIVERY_HELD_BACK_POLL_MS",
        defaultValue: WorkerConfiguration.defaultDeliveryHeldBackPollMilliseconds, range: 10...60_000,
        summary: """
            Milliseconds between a partition's looks at pushes held back (by an earlier push of their device in \
            another partition, say); a partition with none held back does not poll
            """)
    /// `--delivery-record-delay`.
    static let deliveryRecordDelay = IntegerSetting(
        flag: "delivery-record-delay", variable: "BADGEPIPE_DELIVERY_RECORD_DELAY_MS",
        defaultValue: WorkerConfiguration.defaultDeliveryRecordDelayMilliseconds, range: 0...1000,
        summary: """
            Milliseconds a delivery round's outcomes may wait to be recorded with the partition's next claim, after \
            which they are recorded on their own; a crash sends again what went out in that time, with the same \
            apns-id
            """)

    // MARK: Fleets, retention, operations

    /// `--worker-id`.
    static let workerID = TextSetting(
        flag: "worker-id", variable: "BADGEPIPE_WORKER_ID", defaultValue: nil, defaultText: "host-pid-random",
        summary: "Fleet worker id")
    /// `--lease-ttl`.
    static let leaseTTL = IntegerSetting(
        flag: "lease-ttl", variable: "BADGEPIPE_LEASE_TTL_MS",
        defaultValue: Int(WorkerConfiguration.Fleet.defaultLeaseTTLMilliseconds), range: 500...600_000,
        summary: "Partition lease TTL in ms, the failover time")
    /// `--retention-days`.
    static let retentionDays = IntegerSetting(
        flag: "retention-days", variable: "BADGEPIPE_RETENTION_DAYS",
        defaultValue: Retention.Configuration.defaultDays, range: 0...36_500,
        summary: """
            Delete processed event ids, read tombstones, read notifications and read messages older than this many \
            days
            """, note: "0 keeps everything")
    /// `--retention-interval`.
    static let retentionInterval = IntegerSetting(
        flag: "retention-interval", variable: "BADGEPIPE_RETENTION_INTERVAL",
        defaultValue: Retention.Configuration.defaultIntervalSeconds, range: 1...86_400,
        summary: "Seconds between retention passes")
    /// `BADGEPIPE_SCHEMA_CHECK_INTERVAL`, a variable only.
    static let schemaCheckInterval = IntegerSetting(
        flag: nil, variable: "BADGEPIPE_SCHEMA_CHECK_INTERVAL",
        defaultValue: Int(SchemaWatch.defaultInterval.components.seconds), range: 1...3600,
        summary: "Seconds between a running worker's checks that the database schema still serves it")
    /// `--shutdown-timeout`.
    static let shutdownTimeout = IntegerSetting(
        flag: "shutdown-timeout", variable: "BADGEPIPE_SHUTDOWN_TIMEOUT", defaultValue: 30, range: 1...3600,
        summary: "Seconds SIGTERM waits for the batch and delivery round in progress before it cancels them")
    /// `--metrics-host`.
    static let metricsHost = TextSetting(
        flag: "metrics-host", variable: "BADGEPIPE_METRICS_HOST", defaultValue: "127.0.0.1",
        summary: "Operations listener address")
    /// `--metrics-port`: off unless given.
    static let metricsPort = IntegerSetting(
        flag: "metrics-port", variable: "BADGEPIPE_METRICS_PORT", defaultValue: nil, range: 1...65535,
        summary: "Serve /metrics, /healthz and /readyz on this port", defaultText: "off")
}
