import BadgeSupport
import Testing

@Suite struct LoopbackHostTests {
    @Test(arguments: ["localhost", "LOCALHOST", "127.0.0.1", "127.8.9.10", "::1", "[::1]", "0:0:0:0:0:0:0:1"])
    func loopback(host: String) {
        #expect(LoopbackHost.isLoopback(host))
    }

    @Test(arguments: [
        "127.db.example.com", "127.0.0.1.example.com", "localhost.example.com", "127.1", "0177.0.0.1", "128.0.0.1",
        "10.0.0.1", "::2", "[::ffff:127.0.0.1]x", "", "db.example",
    ])
    func anotherHost(host: String) {
        #expect(!LoopbackHost.isLoopback(host))
    }
}
