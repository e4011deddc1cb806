/// An AMQP 0-9-1 field table: message headers and the arguments of declares, binds and consumes.
public typealias AMQPTable = [String: AMQPFieldValue]

/// One value in an AMQP field table, as RabbitMQ encodes it.
public enum AMQPFieldValue: Sendable, Hashable {
    case bool(Bool)
    case int8(Int8)
    case uint8(UInt8)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case float(Float)
    case double(Double)
    case decimal(scale: UInt8, value: UInt32)
    /// A long string ('S'); RabbitMQ uses it for text.
    case string(String)
    /// A byte array ('x').
    case bytes([UInt8])
    /// Seconds since the epoch ('T').
    case timestamp(UInt64)
    case table(AMQPTable)
    case array([AMQPFieldValue])
    case void

    /// The value as a string, when it is a string (or bytes that are UTF-8).
    public var stringValue: String? {
        switch self {
        case .string(let value): return value
        case .bytes(let value): return String(validating: value, as: UTF8.self)
        default: return nil
        }
    }

    /// The value as an integer, when it is any integer kind that fits.
    public var intValue: Int? {
        switch self {
        case .int8(let value): return Int(value)
        case .uint8(let value): return Int(value)
        case .int16(let value): return Int(value)
        case .uint16(let value): return Int(value)
        case .int32(let value): return Int(value)
        case .uint32(let value): return Int(value)
        case .int64(let value): return Int(value)
        case .uint64(let value): return Int(exactly: value)
        default: return nil
        }
    }
}

extension AMQPFieldValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int64(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
