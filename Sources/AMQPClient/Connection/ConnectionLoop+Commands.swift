import CRabbitMQ

extension ConnectionLoop {
    /// Runs one command on the connection's thread and answers its promise.
    func execute(_ command: Command) {
        switch command.operation {
        case .closeConnection:
            closeByClient()
            command.promise?.resume(returning: .done)
            return
        case .openChannel:
            openChannel(command)
            return
        default:
            break
        }
        guard let state = channels[command.channel] else {
            command.fail(AMQPError(.invalidArgument, "channel \(command.channel) was never opened"))
            return
        }
        if let closed = state.closed {
            command.fail(closed)
            return
        }
        run(command, on: command.channel)
    }

    private func run(_ command: Command, on channel: UInt16) {
        guard let connection else { return command.fail(AMQPError(.connectionLost, "connection is gone")) }
        let arena = CArena()
        func answer(_ error: AMQPError?, _ reply: Command.Reply = .done) {
            if let error { command.fail(error) } else { command.promise?.resume(returning: reply) }
        }
        switch command.operation {
        case .openChannel, .closeConnection:
            break
        case .closeChannel:
            closeChannel(channel)
            answer(nil)
        case .exchangeDeclare(
            let name, let type, let passive, let durable, let autoDelete, let isInternal, let arguments):
            amqp_exchange_declare(
                connection, channel, arena.bytes(name), arena.bytes(type), flag(passive), flag(durable),
                flag(autoDelete), flag(isInternal), arena.table(arguments))
            answer(rpcError("exchange.declare \(name)", channel: channel))
        case .exchangeDelete(let name, let ifUnused):
            amqp_exchange_delete(connection, channel, arena.bytes(name), flag(ifUnused))
            answer(rpcError("exchange.delete \(name)", channel: channel))
        case .queueDeclare(let name, let passive, let durable, let exclusive, let autoDelete, let arguments):
            let ok = amqp_queue_declare(
                connection, channel, arena.bytes(name), flag(passive), flag(durable), flag(exclusive),
                flag(autoDelete), arena.table(arguments))
            if let error = rpcError("queue.declare \(name)", channel: channel) { return answer(error) }
            guard let ok else { return answer(AMQPError(.library, "queue.declare \(name): no reply")) }
            let info = AMQPQueueInfo(
                name: ok.pointee.queue.string, messageCount: ok.pointee.message_count,
                consumerCount: ok.pointee.consumer_count)
            answer(nil, .queue(info))
        case .queueBind(let queue, let exchange, let routingKey, let arguments):
            amqp_queue_bind(
                connection, channel, arena.bytes(queue), arena.bytes(exchange), arena.bytes(routingKey),
                arena.table(arguments))
            answer(rpcError("queue.bind \(queue) to \(exchange)", channel: channel))
        case .queueDelete(let name, let ifUnused, let ifEmpty):
            let ok = amqp_queue_delete(connection, channel, arena.bytes(name), flag(ifUnused), flag(ifEmpty))
            if let error = rpcError("queue.delete \(name)", channel: channel) { return answer(error) }
            answer(nil, .messageCount(ok?.pointee.message_count ?? 0))
        case .queuePurge(let name):
            let ok = amqp_queue_purge(connection, channel, arena.bytes(name))
            if let error = rpcError("queue.purge \(name)", channel: channel) { return answer(error) }
            answer(nil, .messageCount(ok?.pointee.message_count ?? 0))
        case .qos(let prefetchCount, let global):
            amqp_basic_qos(connection, channel, 0, prefetchCount, flag(global))
            answer(rpcError("basic.qos", channel: channel))
        case .confirmSelect:
            if channels[channel]?.confirms != nil { return answer(nil) }
            amqp_confirm_select(connection, channel)
            if let error = rpcError("confirm.select", channel: channel) { return answer(error) }
            channels[channel]?.confirms = ConfirmTracker()
            answer(nil)
        case .publish(let request):
            publish(request, command: command, channel: channel, arena: arena)
        case .consume(let request):
            let ok = amqp_basic_consume(
                connection, channel, arena.bytes(request.queue), arena.bytes(request.consumerTag), 0,
                flag(request.noAck), flag(request.exclusive), arena.table(request.arguments))
            if let error = rpcError("basic.consume \(request.queue)", channel: channel) { return answer(error) }
            guard let ok else { return answer(AMQPError(.library, "basic.consume: no reply")) }
            let tag = ok.pointee.consumer_tag.string
            channels[channel]?.consumers[tag] = request.handler
            answer(nil, .consumerTag(tag))
        case .ack(let deliveryTag, let multiple):
            let status = amqp_basic_ack(connection, channel, deliveryTag, flag(multiple))
            answer(statusError(status, what: "basic.ack"))
        case .nack(let deliveryTag, let multiple, let requeue):
            let status = amqp_basic_nack(connection, channel, deliveryTag, flag(multiple), flag(requeue))
            answer(statusError(status, what: "basic.nack"))
        case .reject(let deliveryTag, let requeue):
            let status = amqp_basic_reject(connection, channel, deliveryTag, flag(requeue))
            answer(statusError(status, what: "basic.reject"))
        case .get(let queue, let noAck):
            get(queue: queue, noAck: noAck, command: command, channel: channel, arena: arena)
        }
    }

    private func flag(_ value: Bool) -> amqp_boolean_t { value ? 1 : 0 }

    private func openChannel(_ command: Command) {
        guard let connection else { return command.fail(AMQPError(.connectionLost, "connection is gone")) }
        let limit = UInt16(clamping: negotiatedChannelMax == 0 ? 65535 : negotiatedChannelMax)
        // Fresh numbers first; closed ones are reused only after the whole range has been handed out.
        var candidate = lastChannelID
        var found: UInt16?
        for _ in 0..<Int(limit) {
            candidate = candidate >= limit ? 1 : candidate + 1
            if let existing = channels[candidate], existing.closed == nil { continue }
            found = candidate
            break
        }
        guard let id = found else {
            return command.fail(AMQPError(.invalidArgument, "all \(limit) channels are in use"))
        }
        lastChannelID = id
        amqp_channel_open(connection, id)
        if let error = rpcError("channel.open", channel: id) { return command.fail(error) }
        channels[id] = ChannelState()
        command.promise?.resume(returning: .channel(id))
    }

    /// Closes a channel without `basic.cancel`: the broker requeues its unacked messages in their original
    /// order. Confirms that arrive before `channel.close-ok` still resolve their publishes.
    func closeChannel(_ channel: UInt16) {
        guard let connection, channels[channel]?.closed == nil else { return }
        channels[channel]?.closing = true
        let reply = amqp_channel_close(connection, channel, AMQP_REPLY_SUCCESS)
        // Frames that arrived while waiting for close-ok were queued by rabbitmq-c: settle their confirms.
        pumpIncoming()
        if reply.reply_type == AMQP_RESPONSE_NORMAL {
            endChannel(channel, AMQPError(.closedByClient, "channel \(channel) was closed by the application"))
        } else {
            _ = replyError(reply, what: "channel.close", channel: channel)
        }
    }

    /// Closes every channel, then the connection, then ends the thread.
    func closeByClient() {
        guard connection != nil else { return }
        for id in channels.keys.sorted() where channels[id]?.closed == nil {
            closeChannel(id)
        }
        if let connection {
            _ = amqp_connection_close(connection, AMQP_REPLY_SUCCESS)
        }
        fatal(AMQPError(.closedByClient, "the connection was closed by the application"))
    }

    private func publish(_ request: Command.Publish, command: Command, channel: UInt16, arena: CArena) {
        guard let connection else { return command.fail(AMQPError(.connectionLost, "connection is gone")) }
        var properties = request.properties
        let confirming = channels[channel]?.confirms != nil
        if confirming, request.mandatory, let tag = channels[channel]?.confirms?.nextTag {
            var headers = properties.headers ?? [:]
            headers[Self.returnTagHeader] = .uint64(tag)
            properties.headers = headers
        }
        var cProperties = properties.cProperties(in: arena)
        let status = request.body.withUnsafeBytes { buffer in
            amqp_basic_publish(
                connection, channel, arena.bytes(request.exchange), arena.bytes(request.routingKey),
                flag(request.mandatory), 0, &cProperties,
                amqp_bytes_t(len: buffer.count, bytes: UnsafeMutableRawPointer(mutating: buffer.baseAddress)))
        }
        if let error = statusError(status, what: "basic.publish") {
            command.fail(AMQPError(.publishUnconfirmed, "the message may not have been sent: \(error.message)"))
            return
        }
        publishedCounter.increment()
        if confirming, let promise = command.promise {
            _ = channels[channel]?.confirms?.published(promise)
        } else {
            command.promise?.resume(returning: .done)
        }
    }

    private func get(queue: String, noAck: Bool, command: Command, channel: UInt16, arena: CArena) {
        guard let connection else { return command.fail(AMQPError(.connectionLost, "connection is gone")) }
        let reply = amqp_basic_get(connection, channel, arena.bytes(queue), flag(noAck))
        if let error = replyError(reply, what: "basic.get \(queue)", channel: channel) { return command.fail(error) }
        guard reply.reply.id == BADGEPIPE_BASIC_GET_OK_METHOD, let decoded = reply.reply.decoded else {
            command.promise?.resume(returning: .message(nil))
            return
        }
        let ok = decoded.assumingMemoryBound(to: amqp_basic_get_ok_t.self).pointee
        let deliveryTag = ok.delivery_tag
        let redelivered = ok.redelivered != 0
        let exchange = ok.exchange.string
        let routingKey = ok.routing_key.string
        var message = amqp_message_t()
        let read = amqp_read_message(connection, channel, &message, 0)
        if let error = replyError(read, what: "basic.get \(queue) content", channel: channel) {
            return command.fail(error)
        }
        var fetched = AMQPMessage(
            body: message.body.array, properties: AMQPProperties(message.properties), deliveryTag: deliveryTag,
            redelivered: redelivered, exchange: exchange, routingKey: routingKey, consumerTag: "",
            channel: AMQPChannel(id: channel, mailbox: mailbox))
        fetched.bodySize = fetched.body.count
        amqp_destroy_message(&message)
        command.promise?.resume(returning: .message(fetched))
    }
}

extension ConnectionLoop {
    /// Checks the outcome of the last synchronous method on `channel`. A channel close from the broker is answered
    /// with `channel.close-ok` and ends the channel; a connection close or a library failure ends the connection.
    /// Returns the error to report, or nil on success.
    func rpcError(_ what: String, channel: UInt16) -> AMQPError? {
        guard let connection else { return mailbox.finishedError ?? AMQPError(.connectionLost, "connection is gone") }
        let reply = amqp_get_rpc_reply(connection)
        return replyError(reply, what: what, channel: channel)
    }

    /// Interprets an `amqp_rpc_reply_t` (see `rpcError`).
    func replyError(_ reply: amqp_rpc_reply_t, what: String, channel: UInt16) -> AMQPError? {
        switch reply.reply_type {
        case AMQP_RESPONSE_NORMAL:
            return nil
        case AMQP_RESPONSE_SERVER_EXCEPTION:
            if reply.reply.id == BADGEPIPE_CHANNEL_CLOSE_METHOD, let decoded = reply.reply.decoded {
                let close = decoded.assumingMemoryBound(to: amqp_channel_close_t.self).pointee
                let error = AMQPError(
                    .channelClosed, "\(what): \(close.reply_text.string)", replyCode: close.reply_code)
                acknowledgeChannelClose(channel, error)
                return error
            }
            if reply.reply.id == BADGEPIPE_CONNECTION_CLOSE_METHOD, let decoded = reply.reply.decoded {
                let close = decoded.assumingMemoryBound(to: amqp_connection_close_t.self).pointee
                let error = AMQPError(
                    .connectionClosed, "\(what): \(close.reply_text.string)", replyCode: close.reply_code)
                acknowledgeConnectionClose(error)
                return error
            }
            let error = AMQPError(.library, "\(what): unexpected reply method \(reply.reply.id)")
            fatal(error)
            return error
        case AMQP_RESPONSE_LIBRARY_EXCEPTION:
            let error = AMQPError(.connectionLost, "\(what): \(Self.statusText(reply.library_error))")
            fatal(error)
            return error
        default:
            let error = AMQPError(.library, "\(what): no reply")
            fatal(error)
            return error
        }
    }

    /// Checks the status of an asynchronous method (publish, ack); a failure means the socket is gone.
    func statusError(_ status: Int32, what: String) -> AMQPError? {
        guard status != AMQP_STATUS_OK.rawValue else { return nil }
        let error = AMQPError(.connectionLost, "\(what): \(Self.statusText(status))")
        fatal(error)
        return error
    }

    /// Answers a broker's `channel.close` and ends the channel.
    func acknowledgeChannelClose(_ channel: UInt16, _ error: AMQPError) {
        guard let connection else { return }
        logger.warning(
            "AMQP channel closed by the broker",
            metadata: [
                "amqp.channel": "\(channel)", "amqp.reply_code": "\(error.replyCode ?? 0)",
                "amqp.reply_text": "\(error.message)",
            ])
        var closeOK = amqp_channel_close_ok_t(dummy: 0)
        let status = amqp_send_method(connection, channel, BADGEPIPE_CHANNEL_CLOSE_OK_METHOD, &closeOK)
        endChannel(channel, error)
        _ = statusError(status, what: "channel.close-ok")
    }

    /// Answers a broker's `connection.close` and ends the connection.
    func acknowledgeConnectionClose(_ error: AMQPError) {
        guard let connection else { return }
        var closeOK = amqp_connection_close_ok_t(dummy: 0)
        _ = amqp_send_method(connection, 0, BADGEPIPE_CONNECTION_CLOSE_OK_METHOD, &closeOK)
        fatal(error)
    }
}
