/// Where and how to connect to a broker.
public struct AMQPConfiguration: Sendable, Hashable {
    /// TLS settings for `amqps://` connections.
    public struct TLS: Sendable, Hashable {
        /// PEM file of the certificate authorities to trust; nil uses the system's default store.
        public var caCertificatePath: String?
        /// PEM client certificate and key, for brokers that require client certificates.
        public var certificatePath: String?
        public var keyPath: String?
        /// Verify the broker's certificate chain.
        public var verifyPeer: Bool
        /// Verify that the certificate names the host.
        public var verifyHostname: Bool

        public init(
            caCertificatePath: String? = nil,
            certificatePath: String? = nil,
            keyPath: String? = nil,
            verifyPeer: Bool = true,
            verifyHostname: Bool = true
        ) {
            self.caCertificatePath = caCertificatePath
            self.certificatePath = certificatePath
            self.keyPath = keyPath
            self.verifyPeer = verifyPeer
            self.verifyHostname = verifyHostname
        }
    }

    /// One broker node: where to open the socket.
    public struct Node: Sendable, Hashable, CustomStringConvertible {
        public var host: String
        public var port: Int

        /// Creates a node.
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// `host:port`, as the logs name a node.
        public var description: String { "\(host):\(port)" }
    }

    /// The broker's nodes, in the order they are tried; never empty. One node for a single broker, several for a
    /// cluster: a connection goes to one of them, and the clients move to the next when it is lost.
    public var nodes: [Node] {
        didSet { precondition(!nodes.isEmpty, "an AMQP configuration needs at least one node") }
    }

    /// The first node's host.
    public var host: String {
        get { nodes[0].host }
        set { nodes[0].host = newValue }
    }

    /// The first node's port.
    public var port: Int {
        get { nodes[0].port }
        set { nodes[0].port = newValue }
    }

    /// The virtual host, already percent-decoded.
    public var virtualHost: String
    public var username: String
    public var password: String
    /// Requested heartbeat interval in seconds (the broker may lower it); 0 disables heartbeats.
    public var heartbeatSeconds: Int
    /// How long opening the socket and logging in may take, in seconds.
    public var connectTimeoutSeconds: Double
    /// How long a synchronous method (declare, bind, qos, close) may wait for its reply, in seconds.
    public var rpcTimeoutSeconds: Double
    public var frameMax: Int
    public var channelMax: Int
    /// Shown in the management UI.
    public var connectionName: String?
    /// Non-nil for `amqps://`.
    public var tls: TLS?

    /// Creates a configuration; the defaults match a local RabbitMQ with the guest user.
    public init(
        host: String = "127.0.0.1",
        port: Int? = nil,
        virtualHost: String = "/",
        username: String = "guest",
        password: String = "guest",
        heartbeatSeconds: Int = 30,
        connectTimeoutSeconds: Double = 10,
        rpcTimeoutSeconds: Double = 30,
        frameMax: Int = 131_072,
        channelMax: Int = 2047,
        connectionName: String? = nil,
        tls: TLS? = nil
    ) {
        self.nodes = [Node(host: host, port: port ?? (tls == nil ? 5672 : 5671))]
        self.virtualHost = virtualHost
        self.username = username
        self.password = password
        self.heartbeatSeconds = heartbeatSeconds
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.rpcTimeoutSeconds = rpcTimeoutSeconds
        self.frameMax = frameMax
        self.channelMax = channelMax
        self.connectionName = connectionName
        self.tls = tls
    }

    /// The same configuration with only the node at `index` (modulo the count), for one connection attempt.
    public func only(_ index: Int) -> AMQPConfiguration {
        var single = self
        single.nodes = [nodes[index % nodes.count]]
        return single
    }
}
