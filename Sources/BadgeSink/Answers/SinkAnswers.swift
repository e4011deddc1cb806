import BadgeWire
import Foundation
import Hummingbird

/// The `Codable` bodies of the inspection API's answers whose bytes the contract leaves free.
enum SinkAnswers {
    /// `{"deleted": N}`, the answer of `DELETE /deliveries` and `DELETE /faults`.
    struct Deleted: ResponseEncodable {
        /// How many deliveries or faults were forgotten.
        let deleted: Int
    }

    /// `{"fault": {...}}`, the answer of `POST /faults`.
    struct AddedFault: ResponseEncodable {
        /// The fault as added.
        let fault: Fault
    }

    /// `{"faults": [...]}`, the answer of `GET /faults`.
    struct Faults: ResponseEncodable {
        /// The active faults in insertion order.
        let faults: [Fault]
    }

    /// `{"access_token": …, "expires_in": …, "token_type": "Bearer"}`, an OAuth2 token answer.
    struct IssuedToken: ResponseEncodable {
        let accessToken: String
        let expiresIn: Int
        let tokenType = "Bearer"

        private enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case expiresIn = "expires_in"
            case tokenType = "token_type"
        }
    }

    /// `{"error": …, "error_description": …}`, an OAuth2 error answer.
    struct TokenError: ResponseEncodable {
        let error: String
        let errorDescription: String

        private enum CodingKeys: String, CodingKey {
            case error
            case errorDescription = "error_description"
        }
    }

    /// `{"error": {"code": …, "message": …}}`, the answer of a ``SinkError``.
    struct Failure: ResponseEncodable {
        struct Detail: Encodable {
            let code: String
            let message: String
        }

        let error: Detail
    }

    /// `{"devices": [...]}`, the answer of `GET /devices`.
    struct Devices: ResponseEncodable {
        let devices: [Device]
    }

    /// One device as `GET /devices` and `GET /devices/{token}` show it.
    struct Device: ResponseEncodable {
        struct Alert: Encodable {
            let seq: Int
            let title: String?
            let body: String?
            let thread: String?
            let type: String?
            let receivedAt: String

            private enum CodingKeys: String, CodingKey {
                case seq, title, body, thread, type
                case receivedAt = "received_at"
            }

            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(self.seq, forKey: .seq)
                try container.encode(self.title, forKey: .title)
                try container.encode(self.body, forKey: .body)
                try container.encode(self.thread, forKey: .thread)
                try container.encode(self.type, forKey: .type)
                try container.encode(self.receivedAt, forKey: .receivedAt)
            }
        }

        let token: String
        let provider: String
        let topic: String?
        let environment: String?
        let badge: Int?
        let badgeVersion: Int?
        let counts: [String: Int]
        let lastAlert: Alert?
        let alerts: Int
        let badgeOnly: Int
        let pushes: Int
        let failed: Int
        let lastSeq: Int
        let lastStatus: Int
        let lastReceivedAt: String

        private enum CodingKeys: String, CodingKey {
            case token, provider, topic, environment, badge, counts, alerts, pushes, failed
            case badgeVersion = "badge_version"
            case lastAlert = "last_alert"
            case badgeOnly = "badge_only"
            case lastSeq = "last_seq"
            case lastStatus = "last_status"
            case lastReceivedAt = "last_received_at"
        }

        init(_ device: DeviceSummary) {
            self.token = device.token
            self.provider = device.provider.rawValue
            self.topic = device.topic
            self.environment = device.environment
            self.badge = device.badge
            self.badgeVersion = device.badgeVersion
            self.counts = device.counts
            self.lastAlert = device.lastAlert.map {
                Alert(
                    seq: $0.seq, title: $0.title, body: $0.body, thread: $0.thread, type: $0.type,
                    receivedAt: Device.text($0.receivedAt))
            }
            self.alerts = device.alerts
            self.badgeOnly = device.badgeOnly
            self.pushes = device.pushes
            self.failed = device.failed
            self.lastSeq = device.lastSeq
            self.lastStatus = device.lastStatus
            self.lastReceivedAt = Device.text(device.lastReceivedAt)
        }

        /// Every member present, `null` when unset.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(self.token, forKey: .token)
            try container.encode(self.provider, forKey: .provider)
            try container.encode(self.topic, forKey: .topic)
            try container.encode(self.environment, forKey: .environment)
            try container.encode(self.badge, forKey: .badge)
            try container.encode(self.badgeVersion, forKey: .badgeVersion)
            try container.encode(self.counts, forKey: .counts)
            try container.encode(self.lastAlert, forKey: .lastAlert)
            try container.encode(self.alerts, forKey: .alerts)
            try container.encode(self.badgeOnly, forKey: .badgeOnly)
            try container.encode(self.pushes, forKey: .pushes)
            try container.encode(self.failed, forKey: .failed)
            try container.encode(self.lastSeq, forKey: .lastSeq)
            try container.encode(self.lastStatus, forKey: .lastStatus)
            try container.encode(self.lastReceivedAt, forKey: .lastReceivedAt)
        }

        /// A time as the sink shows times: RFC 3339 in UTC, to the millisecond.
        static func text(_ date: Date) -> String {
            var bytes: [UInt8] = []
            Timestamp(millisecondsSinceEpoch: Timestamp.milliseconds(of: date)).writeRFC3339Milliseconds(into: &bytes)
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}
