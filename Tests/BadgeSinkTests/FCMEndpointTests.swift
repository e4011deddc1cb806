import Foundation
import Testing

@Suite("FCM endpoint over HTTP")
struct FCMEndpointTests {
    @Test("accepts a message like FCM v1, taking the token from the body")
    func acceptsAndRecords() async throws {
        try await RouterSink.withSink { sink in
            let body = """
                {"message":{"token":"fcm-token-1","apns":{"payload":{"aps":{"badge":2},"type":"amen"}},
                 "android":{"notification":{"notification_count":2}},"data":{"type":"amen","badge":"2"}}}
                """
            let answer = try await sink.send(
                "POST",
                "/v1/projects/badgepipe/messages:send",
                json: body,
                headers: [("Authorization", "Bearer test")]
            )
            #expect(answer.status == 200)
            #expect(answer.json["name"] as? String == "projects/badgepipe/messages/1")

            let deliveries = try await sink.deliveries()
            try #require(deliveries.count == 1)
            #expect(deliveries[0]["provider"] as? String == "fcm")
            #expect(deliveries[0]["token"] as? String == "fcm-token-1")
            #expect(deliveries[0]["status"] as? Int == 200)
            // Recorded as what was checked (nothing: the sink has no FCM key), never the token.
            let headers = try #require(deliveries[0]["headers"] as? [String: Any])
            let authorization = try #require(headers["authorization"] as? [String: Any])
            #expect(authorization["scheme"] as? String == "bearer")
            #expect(authorization["verified"] as? Bool == false)
            #expect(authorization.count == 2)
            let message = (deliveries[0]["payload"] as? [String: Any])?["message"] as? [String: Any]
            #expect((message?["data"] as? [String: String])?["badge"] == "2")
        }
    }

    @Test("answers a message without a token with INVALID_ARGUMENT, and records it")
    func rejectsMissingToken() async throws {
        try await RouterSink.withSink { sink in
            let answer = try await sink.send("POST", "/v1/projects/demo/messages:send", json: "{\"message\":{}}")
            #expect(answer.status == 400)
            #expect(Self.errorCode(answer.json) == "INVALID_ARGUMENT")
            let deliveries = try await sink.deliveries()
            #expect(deliveries.count == 1)
            #expect(deliveries.first?["token"] as? String == "")
            #expect(deliveries.first?["reason"] as? String == "INVALID_ARGUMENT")
        }
    }

    @Test(
        "translates a fault's APNs status to FCM",
        arguments: [
            (410, 404, "NOT_FOUND", "UNREGISTERED"),
            (400, 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
            (429, 429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"),
            (503, 503, "UNAVAILABLE", "UNAVAILABLE"),
        ]
    )
    func translatesFaults(apnsStatus: Int, fcmStatus: Int, googleStatus: String, errorCode: String) async throws {
        try await RouterSink.withSink { sink in
            try await sink.addFault("{\"token\":\"fcm-x\",\"status\":\(apnsStatus),\"reason\":\"Whatever\"}")
            let answer = try await sink.pushFCM("fcm-x")
            #expect(answer.status == fcmStatus)
            let error = try #require(answer.json["error"] as? [String: Any])
            #expect(error["code"] as? Int == fcmStatus)
            #expect(error["status"] as? String == googleStatus)
            #expect((error["message"] as? String)?.isEmpty == false)
            let details = try #require(error["details"] as? [[String: Any]])
            #expect(details.first?["@type"] as? String == "type.googleapis.com/google.firebase.fcm.v1.FcmError")
            #expect(Self.errorCode(answer.json) == errorCode)

            let deliveries = try await sink.deliveries("?token=fcm-x")
            #expect(deliveries.first?["status"] as? Int == fcmStatus)
            #expect(deliveries.first?["reason"] as? String == errorCode)
        }
    }

    @Test(
        "a fault that names an FCM error code is answered with it, at the translated status",
        arguments: [
            (410, "UNREGISTERED", 404),
            (404, "UNREGISTERED", 404),
            (403, "SENDER_ID_MISMATCH", 403),
            (500, "INTERNAL", 500),
        ]
    )
    func faultsNamingAnFCMCode(apnsStatus: Int, errorCode: String, fcmStatus: Int) async throws {
        try await RouterSink.withSink { sink in
            try await sink.addFault("{\"token\":\"fcm-x\",\"status\":\(apnsStatus),\"reason\":\"\(errorCode)\"}")
            let answer = try await sink.pushFCM("fcm-x")
            #expect(answer.status == fcmStatus)
            #expect(Self.errorCode(answer.json) == errorCode)
        }
    }

    static func errorCode(_ json: [String: Any]) -> String? {
        let details = (json["error"] as? [String: Any])?["details"] as? [[String: Any]]
        return details?.first?["errorCode"] as? String
    }
}
