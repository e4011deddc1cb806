import AMQPClient
import Testing

@Suite("AMQP URL parsing")
struct AMQPConfigurationURLTests {
    @Test func fullURL() throws {
        let configuration = try AMQPConfiguration(url: "amqp://user:secret@broker.example:5673/prod?heartbeat=10")
        #expect(configuration.host == "broker.example")
        #expect(configuration.port == 5673)
        #expect(configuration.username == "user")
        #expect(configuration.password == "secret")
        #expect(configuration.virtualHost == "prod")
        #expect(configuration.heartbeatSeconds == 10)
        #expect(configuration.tls == nil)
    }

    @Test func defaults() throws {
        let configuration = try AMQPConfiguration(url: "amqp://")
        #expect(configuration.host == "localhost")
        #expect(configuration.port == 5672)
        #expect(configuration.username == "guest")
        #expect(configuration.password == "guest")
        #expect(configuration.virtualHost == "/")
        #expect(configuration.heartbeatSeconds == 30)
    }

    @Test func aCallerDefaultHeartbeatAppliesOnlyWhenTheURLNamesNone() throws {
        #expect(try AMQPConfiguration(url: "amqp://h/", defaultHeartbeatSeconds: 5).heartbeatSeconds == 5)
        #expect(try AMQPConfiguration(url: "amqp://h/?heartbeat=20", defaultHeartbeatSeconds: 5).heartbeatSeconds == 20)
        #expect(try AMQPConfiguration(url: "amqp://h/?heartbeat=0", defaultHeartbeatSeconds: 5).heartbeatSeconds == 0)
    }

    @Test func vhostPercentDecoding() throws {
        #expect(try AMQPConfiguration(url: "amqp://h/%2F").virtualHost == "/")
        #expect(try AMQPConfiguration(url: "amqp://h/a%2Fb%20c").virtualHost == "a/b c")
        #expect(try AMQPConfiguration(url: "amqp://h/").virtualHost == "")
        #expect(try AMQPConfiguration(url: "amqp://h").virtualHost == "/")
    }

    @Test func userInfoPercentDecoding() throws {
        let configuration = try AMQPConfiguration(url: "amqp://us%40er:p%3Ass@h")
        #expect(configuration.username == "us@er")
        #expect(configuration.password == "p:ss")
    }

    @Test func reservedCharactersInUserInfoMustBeEncoded() throws {
        #expect(try AMQPConfiguration(url: "amqp://u:p%40ss%2F@h").password == "p@ss/")
        for url in ["amqp://u:p@ss@h/", "amqp://h/?heartbeat=%ff", "amqp:h", "amqp://h/v#top"] {
            #expect(throws: AMQPError.self, "\(url)") { try AMQPConfiguration(url: url) }
        }
        // An empty pair in the query is skipped, as before.
        #expect(try AMQPConfiguration(url: "amqp://h/?heartbeat=5&&frame_max=8192").frameMax == 8192)
    }

    @Test func tlsAndOptions() throws {
        let configuration = try AMQPConfiguration(
            url: "amqps://h/v?cacertfile=/etc/ca.pem&verify=verify_none&connection_timeout=2500&frame_max=8192")
        #expect(configuration.port == 5671)
        #expect(configuration.tls?.caCertificatePath == "/etc/ca.pem")
        #expect(configuration.tls?.verifyPeer == false)
        #expect(configuration.tls?.verifyHostname == false)
        #expect(configuration.connectTimeoutSeconds == 2.5)
        #expect(configuration.frameMax == 8192)
    }

    @Test func ipv6Host() throws {
        let configuration = try AMQPConfiguration(url: "amqp://[::1]:5999/x")
        #expect(configuration.host == "::1")
        #expect(configuration.port == 5999)
    }

    @Test(arguments: [
        "http://h/", "amqp://h:0/", "amqp://h:99999/", "amqp://h:abc/", "amqp://h/a/b", "amqp://h/%zz",
        "amqp://h/?heartbeat=-1", "amqp://h/?bogus=1", "amqp://h/?cacertfile=/x", "amqp://[::1/", "amqp://h/%ff",
        "amqps://h/?verify=maybe",
    ])
    func rejects(url: String) {
        #expect(throws: AMQPError.self) { try AMQPConfiguration(url: url) }
        do {
            _ = try AMQPConfiguration(url: url)
        } catch {
            #expect(error.code == .invalidURL)
        }
    }

    @Test func redactsPasswords() {
        #expect(AMQPConfiguration.redacted("amqp://u:pw@h:1/v") == "amqp://u:***@h:1/v")
        #expect(AMQPConfiguration.redacted("amqp://h/v") == "amqp://h/v")
        // Unencoded characters that end an authority for a parser still stay hidden.
        for password in ["p/ss", "p?ss", "p#ss", "p@ss", "p:ss", "p%2Fss", "/?#@:"] {
            let redacted = AMQPConfiguration.redacted("amqp://user:\(password)@host:5672/vhost")
            #expect(redacted == "amqp://user:***@host:5672/vhost", "\(redacted)")
            #expect(!redacted.contains(password))
        }
    }

    @Test func retryPolicyGrowsAndCaps() {
        let policy = AMQPRetryPolicy(initialDelay: .milliseconds(100), maxDelay: .seconds(2), jitter: 0)
        #expect(policy.delay(afterAttempt: 1) == .milliseconds(100))
        #expect(policy.delay(afterAttempt: 2) == .milliseconds(200))
        #expect(policy.delay(afterAttempt: 4) == .milliseconds(800))
        #expect(policy.delay(afterAttempt: 10) == .seconds(2))
        let jittered = AMQPRetryPolicy(initialDelay: .milliseconds(1000), jitter: 0.5)
        #expect(jittered.delay(afterAttempt: 1, random: 0) == .milliseconds(500))
        #expect(jittered.delay(afterAttempt: 1, random: 1) == .milliseconds(1000))
    }

    @Test func aListNamesEveryNodeInOrder() throws {
        let configuration = try AMQPConfiguration(
            url: "amqp://u:p@rabbit-1:5672/%2F,amqp://u:p@rabbit-2:5673/%2F,amqp://u:p@rabbit-3/%2F")
        #expect(configuration.nodes.map(\.description) == ["rabbit-1:5672", "rabbit-2:5673", "rabbit-3:5672"])
        #expect(configuration.host == "rabbit-1")
        #expect(configuration.username == "u")
        #expect(configuration.only(4).nodes.map(\.description) == ["rabbit-2:5673"])
        #expect(try AMQPConfiguration(url: "amqp://h/").nodes.count == 1)
    }

    @Test func aCommaInAPasswordDoesNotSplitTheList() throws {
        let configuration = try AMQPConfiguration(url: "amqp://u:a%2Cb,c@h1:1/v,amqp://u:a%2Cb,c@h2:2/v")
        #expect(configuration.nodes.map(\.description) == ["h1:1", "h2:2"])
        #expect(configuration.password == "a,b,c")
        #expect(
            AMQPConfiguration.redacted("amqp://u:x,y@h1:1/v,amqp://u:x,y@h2:2/v")
                == "amqp://u:***@h1:1/v,amqp://u:***@h2:2/v")
    }

    @Test(arguments: [
        "amqp://u:p@h1/v,amqp://other:p@h2/v", "amqp://h1/v,amqp://h2/w", "amqp://h1/,amqp://h2/?heartbeat=5",
        "amqp://h1/,amqp://h2:0/", "amqp://h1/v,amqps://h2/v",
    ])
    func refusesNodesThatDifferInMoreThanHostAndPort(url: String) {
        #expect(throws: AMQPError.self) { try AMQPConfiguration(url: url) }
    }

    @Test func onlyALostOrUnreachableBrokerIsWorthAnotherNode() {
        for code: AMQPError.Code in [.connectionFailed, .connectionLost, .connectionClosed] {
            #expect(AMQPError(code, "x").isUnreachable)
        }
        for code: AMQPError.Code in [.authenticationFailed, .tls, .invalidURL, .channelClosed, .publishNacked] {
            #expect(!AMQPError(code, "x").isUnreachable)
        }
    }
}
