import Foundation
import Testing

@testable import BadgeSink

@Suite("Delivery filters over HTTP")
struct FilterTests {
    @Test("filters by tokens, provider, status, type, kind and text, then limit")
    func filters() async throws {
        try await RouterSink.withSink { sink in
            _ = try await sink.alert("a", badge: 1, version: 1, title: "Ann commented", type: "comment")  // 1
            _ = try await sink.badgeOnly("a", badge: 0, version: 2)  // 2
            _ = try await sink.alert("b", badge: 1, version: 1, title: "Bob follows", type: "follow")  // 3
            try await sink.addFault("{\"token\":\"c\",\"status\":410}")
            _ = try await sink.alert("c", badge: 1, version: 1, title: "gone", type: "follow")  // 4
            _ = try await sink.fcmAlert("d", badge: 2, version: 1, title: "FCM hello")  // 5

            func seqs(_ query: String) async throws -> [Int] {
                try await sink.deliveries(query).compactMap { $0["seq"] as? Int }
            }
            #expect(try await seqs("?token=a,b") == [1, 2, 3])
            #expect(try await seqs("?token=b&token=a") == [1, 2, 3])
            #expect(try await seqs("?provider=fcm") == [5])
            #expect(try await seqs("?status=410") == [4])
            #expect(try await seqs("?status=200,410&token=c,d") == [4, 5])
            #expect(try await seqs("?type=follow") == [3, 4, 5])
            #expect(try await seqs("?kind=badge_only") == [2])
            #expect(try await seqs("?kind=alert&status=200") == [1, 3, 5])
            #expect(try await seqs("?text=bob%20FOLLOWS") == [3])
            #expect(try await seqs("?type=follow&limit=2") == [3, 4])
            #expect(try await seqs("?type=follow&after=3") == [4, 5])
            for bad in ["?kind=loud", "?status=abc", "?provider=web", "?type=", "?limit=-1", "?min=x"] {
                let answer = try await sink.send("GET", "/deliveries\(bad)")
                #expect(answer.status == 400, "\(bad)")
            }
        }
    }
}
