import BadgeWire

/// Selected deliveries taken out of the store, readable and renderable without holding its lock.
struct ReceivedPushSnapshot: Sendable {
    let records: [ReceivedPushRecord]
    let chunks: [[UInt8]]
    let tokens: [String]
    let reasons: [String]
    /// The interned authorization records; index 0 is none.
    let authorizations: [RecordedAuthorization?]

    /// The received pushes as values.
    var receivedPushes: [ReceivedPush] {
        self.records.map { record in
            let (headers, body) = self.bytes(of: record)
            return ReceivedPush(
                seq: Int(record.seq),
                provider: record.provider,
                token: self.tokens[Int(record.token)],
                headers: ReceivedPushBlob.decodeHeaders(headers),
                authorization: self.authorizations[Int(record.authorization)],
                body: Array(body),
                bodyIsJSON: record.bodyIsJSON,
                status: Int(record.status),
                reason: record.reason == 0 ? nil : self.reasons[Int(record.reason)],
                receivedAt: Timestamp(millisecondsSinceEpoch: record.receivedAtMilliseconds).date,
                httpVersion: record.httpVersion.text
            )
        }
    }

    /// `{"deliveries": [...]}`, each delivery as in the contract, oldest first.
    var json: [UInt8] {
        var capacity = 32
        for record in self.records {
            capacity += 192 + Int(record.headersLength) * 2 + Int(record.bodyLength)
        }
        var writer = JSONWriter(capacity: capacity)
        writer.raw("{\"deliveries\":[")
        for (index, record) in self.records.enumerated() {
            if index > 0 {
                writer.raw(",")
            }
            self.write(record, into: &writer)
        }
        writer.raw("]}")
        return writer.bytes
    }

    private func write(_ record: ReceivedPushRecord, into writer: inout JSONWriter) {
        let (headers, body) = self.bytes(of: record)
        writer.raw("{\"seq\":")
        writer.int(Int(record.seq))
        switch record.provider {
        case .apns: writer.raw(",\"provider\":\"apns\",\"token\":")
        case .fcm: writer.raw(",\"provider\":\"fcm\",\"token\":")
        }
        writer.string(self.tokens[Int(record.token)])
        writer.raw(",\"headers\":{")
        var first = true
        ReceivedPushBlob.forEachHeader(in: headers) { name, value in
            if !first {
                writer.raw(",")
            }
            first = false
            writer.string(utf8: name)
            writer.raw(":")
            writer.string(utf8: value)
        }
        if let authorization = self.authorizations[Int(record.authorization)] {
            writer.raw(first ? "\"authorization\":" : ",\"authorization\":")
            authorization.write(into: &writer)
        }
        writer.raw("},\"payload\":")
        if record.bodyIsJSON {
            writer.raw(bytes: body)
        } else {
            writer.lossyString(bytes: body)
        }
        writer.raw(",\"status\":")
        writer.int(Int(record.status))
        writer.raw(",\"reason\":")
        if record.reason == 0 {
            writer.raw("null")
        } else {
            writer.string(self.reasons[Int(record.reason)])
        }
        if record.delayMilliseconds > 0 {
            writer.raw(",\"delay_ms\":")
            writer.int(Int(record.delayMilliseconds))
        }
        writer.raw(",\"received_at\":\"")
        Timestamp(millisecondsSinceEpoch: record.receivedAtMilliseconds).writeRFC3339Milliseconds(into: &writer.bytes)
        writer.raw(record.httpVersion == .http2 ? "\",\"http_version\":\"2\"}" : "\",\"http_version\":\"1.1\"}")
    }

    func bytes(of record: ReceivedPushRecord) -> (headers: ArraySlice<UInt8>, body: ArraySlice<UInt8>) {
        let chunk = self.chunks[Int(record.location.chunk)]
        let start = Int(record.location.offset)
        let bodyStart = start + Int(record.headersLength)
        return (chunk[start..<bodyStart], chunk[bodyStart..<bodyStart + Int(record.bodyLength)])
    }
}
