import Foundation

extension Fault {
    /// Parses and validates a `POST /faults` body:
    /// `{"token"?: T, "status": 410, "reason"?: "Unregistered", "times"?: N, "rate"?: 0.0–1.0}`.
    /// - Throws: ``SinkError`` with code `invalid_fault` for a body that is not such an object.
    public init<Bytes: Collection<UInt8>>(json: Bytes) throws(SinkError) {
        let body: FaultBody
        do {
            body = try JSONDecoder().decode(FaultBody.self, from: Data(json))
        } catch let error as SinkError {
            throw error
        } catch {
            throw .invalidFault("the body must be a JSON object like {\"status\": 410, \"reason\": \"Unregistered\"}")
        }
        try self.init(token: body.token, status: body.status, reason: body.reason, times: body.times, rate: body.rate)
    }

    /// The fault as a JSON object, as listed by `GET /faults`; `times` is the count still to fire.
    func writeJSON(into writer: inout JSONWriter) {
        writer.raw("{\"token\":")
        writer.optionalString(self.token)
        writer.raw(",\"status\":")
        writer.int(self.status)
        writer.raw(",\"reason\":")
        writer.string(self.reason)
        writer.raw(",\"times\":")
        if let times = self.times {
            writer.int(times)
        } else {
            writer.raw("null")
        }
        writer.raw(",\"rate\":")
        if let rate = self.rate {
            writer.double(rate)
        } else {
            writer.raw("null")
        }
        writer.raw("}")
    }
}

/// The wire form of a fault, decoded field by field to say which one is wrong.
private struct FaultBody: Decodable {
    var token: String?
    var status: Int
    var reason: String?
    var times: Int?
    var rate: Double?

    private enum CodingKeys: String, CodingKey {
        case token, status, reason, times, rate
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.token = try Self.field(container, .token, "a string") { try $0.decodeIfPresent(String.self, forKey: $1) }
        let status = try Self.field(container, .status, "an integer") { try $0.decodeIfPresent(Int.self, forKey: $1) }
        guard let status else {
            throw SinkError.invalidFault("`status` is required")
        }
        self.status = status
        self.reason = try Self.field(container, .reason, "a string") { try $0.decodeIfPresent(String.self, forKey: $1) }
        self.times = try Self.field(container, .times, "an integer") { try $0.decodeIfPresent(Int.self, forKey: $1) }
        self.rate = try Self.field(container, .rate, "a number") { try $0.decodeIfPresent(Double.self, forKey: $1) }
    }

    private static func field<Value>(
        _ container: KeyedDecodingContainer<CodingKeys>,
        _ key: CodingKeys,
        _ expected: String,
        _ decode: (KeyedDecodingContainer<CodingKeys>, CodingKeys) throws -> Value?
    ) throws -> Value? {
        do {
            return try decode(container, key)
        } catch {
            throw SinkError.invalidFault("`\(key.rawValue)` must be \(expected)")
        }
    }
}
