import CRabbitMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Owns the C memory that one call into rabbitmq-c needs (strings, tables), freed all at once afterwards.
/// Used only on the connection's thread.
final class CArena {
    private var allocations: [UnsafeMutableRawPointer] = []

    init() {}

    deinit {
        for pointer in allocations { free(pointer) }
    }

    /// Copies bytes into arena memory.
    func bytes(_ source: some Collection<UInt8>) -> amqp_bytes_t {
        let count = source.count
        guard count > 0 else { return amqp_bytes_t(len: 0, bytes: nil) }
        let memory = malloc(count)!
        allocations.append(memory)
        let typed = memory.bindMemory(to: UInt8.self, capacity: count)
        _ = UnsafeMutableBufferPointer(start: typed, count: count).initialize(from: source)
        return amqp_bytes_t(len: count, bytes: memory)
    }

    /// Copies a string's UTF-8 into arena memory.
    func bytes(_ string: String) -> amqp_bytes_t { bytes(string.utf8) }

    /// A NUL-terminated copy of a string.
    func cString(_ string: String) -> UnsafePointer<CChar> {
        let utf8 = Array(string.utf8CString)
        let memory = malloc(utf8.count)!
        allocations.append(memory)
        let typed = memory.bindMemory(to: CChar.self, capacity: utf8.count)
        typed.initialize(from: utf8, count: utf8.count)
        return UnsafePointer(typed)
    }

    /// Uninitialised storage for `count` values of `T`.
    func allocate<T>(_ type: T.Type, count: Int) -> UnsafeMutablePointer<T> {
        let memory = malloc(max(1, count * MemoryLayout<T>.stride))!
        allocations.append(memory)
        return memory.bindMemory(to: T.self, capacity: max(1, count))
    }

    /// A C field table holding `table`, valid until the arena is freed. Nil and empty tables are `amqp_empty_table`.
    func table(_ table: AMQPTable?) -> amqp_table_t {
        guard let table, !table.isEmpty else { return amqp_table_t(num_entries: 0, entries: nil) }
        let entries = allocate(amqp_table_entry_t.self, count: table.count)
        // Sorted for a deterministic wire order.
        for (offset, (key, value)) in table.sorted(by: { $0.key < $1.key }).enumerated() {
            entries[offset] = amqp_table_entry_t(key: bytes(key), value: fieldValue(value))
        }
        return amqp_table_t(num_entries: Int32(table.count), entries: entries)
    }

    private func fieldValue(_ value: AMQPFieldValue) -> amqp_field_value_t {
        var field = amqp_field_value_t()
        func kind(_ kind: amqp_field_value_kind_t) { field.kind = UInt8(truncatingIfNeeded: kind.rawValue) }
        switch value {
        case .bool(let flag):
            kind(AMQP_FIELD_KIND_BOOLEAN)
            field.value.boolean = flag ? 1 : 0
        case .int8(let number):
            kind(AMQP_FIELD_KIND_I8)
            field.value.i8 = number
        case .uint8(let number):
            kind(AMQP_FIELD_KIND_U8)
            field.value.u8 = number
        case .int16(let number):
            kind(AMQP_FIELD_KIND_I16)
            field.value.i16 = number
        case .uint16(let number):
            kind(AMQP_FIELD_KIND_U16)
            field.value.u16 = number
        case .int32(let number):
            kind(AMQP_FIELD_KIND_I32)
            field.value.i32 = number
        case .uint32(let number):
            kind(AMQP_FIELD_KIND_U32)
            field.value.u32 = number
        case .int64(let number):
            kind(AMQP_FIELD_KIND_I64)
            field.value.i64 = number
        case .uint64(let number):
            kind(AMQP_FIELD_KIND_U64)
            field.value.u64 = number
        case .float(let number):
            kind(AMQP_FIELD_KIND_F32)
            field.value.f32 = number
        case .double(let number):
            kind(AMQP_FIELD_KIND_F64)
            field.value.f64 = number
        case .decimal(let scale, let number):
            kind(AMQP_FIELD_KIND_DECIMAL)
            field.value.decimal = amqp_decimal_t(decimals: scale, value: number)
        case .string(let text):
            kind(AMQP_FIELD_KIND_UTF8)
            field.value.bytes = bytes(text)
        case .bytes(let data):
            kind(AMQP_FIELD_KIND_BYTES)
            field.value.bytes = bytes(data)
        case .timestamp(let seconds):
            kind(AMQP_FIELD_KIND_TIMESTAMP)
            field.value.u64 = seconds
        case .table(let nested):
            kind(AMQP_FIELD_KIND_TABLE)
            field.value.table = table(nested)
        case .array(let values):
            kind(AMQP_FIELD_KIND_ARRAY)
            let storage = allocate(amqp_field_value_t.self, count: values.count)
            for (offset, element) in values.enumerated() { storage[offset] = fieldValue(element) }
            field.value.array = amqp_array_t(num_entries: Int32(values.count), entries: storage)
        case .void:
            kind(AMQP_FIELD_KIND_VOID)
        }
        return field
    }
}
