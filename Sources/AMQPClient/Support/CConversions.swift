import CRabbitMQ

extension amqp_bytes_t {
    /// A Swift copy of the bytes.
    var array: [UInt8] {
        guard len > 0, let bytes else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: len))
    }

    /// The bytes as a string (invalid UTF-8 is repaired, which never happens for names RabbitMQ sends).
    var string: String {
        guard len > 0, let bytes else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: bytes, count: len), as: UTF8.self)
    }
}

extension AMQPTable {
    /// Copies a C field table into Swift values.
    init(_ table: amqp_table_t) {
        self.init()
        guard table.num_entries > 0, let entries = table.entries else { return }
        for index in 0..<Int(table.num_entries) {
            let entry = entries[index]
            self[entry.key.string] = AMQPFieldValue(entry.value)
        }
    }
}

extension AMQPFieldValue {
    /// Copies one C field value; unknown kinds become `.void`.
    init(_ field: amqp_field_value_t) {
        func isKind(_ kind: amqp_field_value_kind_t) -> Bool { field.kind == UInt8(truncatingIfNeeded: kind.rawValue) }
        if isKind(AMQP_FIELD_KIND_BOOLEAN) {
            self = .bool(field.value.boolean != 0)
        } else if isKind(AMQP_FIELD_KIND_I8) {
            self = .int8(field.value.i8)
        } else if isKind(AMQP_FIELD_KIND_U8) {
            self = .uint8(field.value.u8)
        } else if isKind(AMQP_FIELD_KIND_I16) {
            self = .int16(field.value.i16)
        } else if isKind(AMQP_FIELD_KIND_U16) {
            self = .uint16(field.value.u16)
        } else if isKind(AMQP_FIELD_KIND_I32) {
            self = .int32(field.value.i32)
        } else if isKind(AMQP_FIELD_KIND_U32) {
            self = .uint32(field.value.u32)
        } else if isKind(AMQP_FIELD_KIND_I64) {
            self = .int64(field.value.i64)
        } else if isKind(AMQP_FIELD_KIND_U64) {
            self = .uint64(field.value.u64)
        } else if isKind(AMQP_FIELD_KIND_F32) {
            self = .float(field.value.f32)
        } else if isKind(AMQP_FIELD_KIND_F64) {
            self = .double(field.value.f64)
        } else if isKind(AMQP_FIELD_KIND_DECIMAL) {
            self = .decimal(scale: field.value.decimal.decimals, value: field.value.decimal.value)
        } else if isKind(AMQP_FIELD_KIND_UTF8) {
            self = .string(field.value.bytes.string)
        } else if isKind(AMQP_FIELD_KIND_BYTES) {
            self = .bytes(field.value.bytes.array)
        } else if isKind(AMQP_FIELD_KIND_TIMESTAMP) {
            self = .timestamp(field.value.u64)
        } else if isKind(AMQP_FIELD_KIND_TABLE) {
            self = .table(AMQPTable(field.value.table))
        } else if isKind(AMQP_FIELD_KIND_ARRAY) {
            let array = field.value.array
            var values: [AMQPFieldValue] = []
            if array.num_entries > 0, let entries = array.entries {
                for index in 0..<Int(array.num_entries) { values.append(AMQPFieldValue(entries[index])) }
            }
            self = .array(values)
        } else {
            self = .void
        }
    }
}

extension AMQPProperties {
    /// Copies a C content header.
    init(_ properties: amqp_basic_properties_t) {
        self.init()
        let flags = properties._flags
        func has(_ flag: Int32) -> Bool { flags & amqp_flags_t(UInt32(bitPattern: flag)) != 0 }
        func text(_ field: KeyPath<amqp_basic_properties_t, amqp_bytes_t>, _ flag: Int32) -> String? {
            has(flag) ? properties[keyPath: field].string : nil
        }
        contentType = text(\.content_type, AMQP_BASIC_CONTENT_TYPE_FLAG)
        contentEncoding = text(\.content_encoding, AMQP_BASIC_CONTENT_ENCODING_FLAG)
        if has(AMQP_BASIC_HEADERS_FLAG) { headers = AMQPTable(properties.headers) }
        if has(AMQP_BASIC_DELIVERY_MODE_FLAG) { deliveryMode = DeliveryMode(rawValue: properties.delivery_mode) }
        if has(AMQP_BASIC_PRIORITY_FLAG) { priority = properties.priority }
        correlationID = text(\.correlation_id, AMQP_BASIC_CORRELATION_ID_FLAG)
        replyTo = text(\.reply_to, AMQP_BASIC_REPLY_TO_FLAG)
        expiration = text(\.expiration, AMQP_BASIC_EXPIRATION_FLAG)
        messageID = text(\.message_id, AMQP_BASIC_MESSAGE_ID_FLAG)
        if has(AMQP_BASIC_TIMESTAMP_FLAG) { timestamp = properties.timestamp }
        type = text(\.type, AMQP_BASIC_TYPE_FLAG)
        userID = text(\.user_id, AMQP_BASIC_USER_ID_FLAG)
        appID = text(\.app_id, AMQP_BASIC_APP_ID_FLAG)
    }

    /// A C content header in `arena` memory.
    func cProperties(in arena: CArena) -> amqp_basic_properties_t {
        var properties = amqp_basic_properties_t()
        var flags: UInt32 = 0
        func set(_ flag: Int32) { flags |= UInt32(bitPattern: flag) }
        func text(_ value: String?, _ field: WritableKeyPath<amqp_basic_properties_t, amqp_bytes_t>, _ flag: Int32) {
            guard let value else { return }
            properties[keyPath: field] = arena.bytes(value)
            set(flag)
        }
        text(contentType, \.content_type, AMQP_BASIC_CONTENT_TYPE_FLAG)
        text(contentEncoding, \.content_encoding, AMQP_BASIC_CONTENT_ENCODING_FLAG)
        if let headers {
            properties.headers = arena.table(headers)
            set(AMQP_BASIC_HEADERS_FLAG)
        }
        if let deliveryMode {
            properties.delivery_mode = deliveryMode.rawValue
            set(AMQP_BASIC_DELIVERY_MODE_FLAG)
        }
        if let priority {
            properties.priority = priority
            set(AMQP_BASIC_PRIORITY_FLAG)
        }
        text(correlationID, \.correlation_id, AMQP_BASIC_CORRELATION_ID_FLAG)
        text(replyTo, \.reply_to, AMQP_BASIC_REPLY_TO_FLAG)
        text(expiration, \.expiration, AMQP_BASIC_EXPIRATION_FLAG)
        text(messageID, \.message_id, AMQP_BASIC_MESSAGE_ID_FLAG)
        if let timestamp {
            properties.timestamp = timestamp
            set(AMQP_BASIC_TIMESTAMP_FLAG)
        }
        text(type, \.type, AMQP_BASIC_TYPE_FLAG)
        text(userID, \.user_id, AMQP_BASIC_USER_ID_FLAG)
        text(appID, \.app_id, AMQP_BASIC_APP_ID_FLAG)
        properties._flags = amqp_flags_t(flags)
        return properties
    }
}
