import CRabbitMQ

extension ConnectionLoop {
    /// Reads and handles every frame available right now without blocking; rabbitmq-c also sends a heartbeat
    /// from inside these calls when one is due.
    func pumpIncoming() {
        var zero = Self.timeval(seconds: 0)
        while let connection {
            amqp_maybe_release_buffers(connection)
            var envelope = amqp_envelope_t()
            let reply = amqp_consume_message(connection, &envelope, &zero, 0)
            if reply.reply_type == AMQP_RESPONSE_NORMAL {
                lastInbound = Self.monotonicNanoseconds()
                handOut(envelope)
                amqp_destroy_envelope(&envelope)
                continue
            }
            guard reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION else {
                fatal(AMQPError(.library, "unexpected reply while reading frames"))
                return
            }
            if reply.library_error == AMQP_STATUS_TIMEOUT.rawValue { return }
            guard reply.library_error == AMQP_STATUS_UNEXPECTED_STATE.rawValue else {
                fatal(AMQPError(.connectionLost, "reading from the broker: \(Self.statusText(reply.library_error))"))
                return
            }
            // Not a message: rabbitmq-c put the frame back for us to read.
            var frame = amqp_frame_t()
            let status = amqp_simple_wait_frame_noblock(connection, &frame, &zero)
            if status == AMQP_STATUS_TIMEOUT.rawValue { return }
            guard status == AMQP_STATUS_OK.rawValue else {
                fatal(AMQPError(.connectionLost, "reading from the broker: \(Self.statusText(status))"))
                return
            }
            lastInbound = Self.monotonicNanoseconds()
            handle(frame)
        }
    }

    private func handOut(_ envelope: amqp_envelope_t) {
        let channel = envelope.channel
        guard let state = channels[channel], state.closed == nil, !state.closing else { return }
        let consumerTag = envelope.consumer_tag.string
        guard let handler = state.consumers[consumerTag] else {
            logger.debug("message for an unknown consumer", metadata: ["amqp.consumer_tag": "\(consumerTag)"])
            return
        }
        deliveredCounter.increment()
        let size = envelope.message.body.len
        var spilled: AMQPSpilledBody?
        if let limit = handler.maxBodyBytes, size > limit, let bytes = envelope.message.body.bytes {
            spilled = AMQPSpilledBody(
                UnsafeRawBufferPointer(start: bytes, count: size), directory: handler.spillDirectory)
            if spilled == nil {
                logger.warning(
                    "could not write a long message body to a file; keeping it in memory",
                    metadata: ["amqp.body_size": "\(size)", "amqp.spill_directory": "\(handler.spillDirectory)"])
            }
        }
        var message = AMQPMessage(
            body: spilled == nil ? envelope.message.body.array : [],
            properties: AMQPProperties(envelope.message.properties),
            deliveryTag: envelope.delivery_tag,
            redelivered: envelope.redelivered != 0,
            exchange: envelope.exchange.string,
            routingKey: envelope.routing_key.string,
            consumerTag: consumerTag,
            channel: AMQPChannel(id: channel, mailbox: mailbox))
        message.bodySize = size
        message.spilledBody = spilled
        handler.message(message)
    }

    private func handle(_ frame: amqp_frame_t) {
        guard frame.frame_type == UInt8(AMQP_FRAME_METHOD) else { return }
        let channel = frame.channel
        let method = frame.payload.method
        guard let decoded = method.decoded else { return }
        switch method.id {
        case BADGEPIPE_BASIC_ACK_METHOD:
            let ack = decoded.assumingMemoryBound(to: amqp_basic_ack_t.self).pointee
            settle(channel: channel, tag: ack.delivery_tag, multiple: ack.multiple != 0, nack: false)
        case BADGEPIPE_BASIC_NACK_METHOD:
            let nack = decoded.assumingMemoryBound(to: amqp_basic_nack_t.self).pointee
            settle(channel: channel, tag: nack.delivery_tag, multiple: nack.multiple != 0, nack: true)
        case BADGEPIPE_BASIC_RETURN_METHOD:
            let returned = decoded.assumingMemoryBound(to: amqp_basic_return_t.self).pointee
            handleReturn(channel: channel, replyCode: returned.reply_code, replyText: returned.reply_text.string)
        case BADGEPIPE_CHANNEL_CLOSE_METHOD:
            let close = decoded.assumingMemoryBound(to: amqp_channel_close_t.self).pointee
            acknowledgeChannelClose(
                channel, AMQPError(.channelClosed, close.reply_text.string, replyCode: close.reply_code))
        case BADGEPIPE_CONNECTION_CLOSE_METHOD:
            let close = decoded.assumingMemoryBound(to: amqp_connection_close_t.self).pointee
            acknowledgeConnectionClose(
                AMQPError(.connectionClosed, close.reply_text.string, replyCode: close.reply_code))
        case BADGEPIPE_CONNECTION_BLOCKED_METHOD:
            let blocked = decoded.assumingMemoryBound(to: amqp_connection_blocked_t.self).pointee
            let reason = blocked.reason.string
            logger.warning("AMQP connection blocked by the broker", metadata: ["amqp.reason": "\(reason)"])
            events.yield(.blocked(reason: reason))
        case BADGEPIPE_CONNECTION_UNBLOCKED_METHOD:
            logger.info("AMQP connection unblocked")
            events.yield(.unblocked)
        case BADGEPIPE_BASIC_CANCEL_METHOD:
            let cancel = decoded.assumingMemoryBound(to: amqp_basic_cancel_t.self).pointee
            let tag = cancel.consumer_tag.string
            if let handler = channels[channel]?.consumers.removeValue(forKey: tag) {
                handler.end(AMQPError(.consumerCancelled, "the broker cancelled consumer \(tag) (queue deleted?)"))
            }
        default:
            logger.debug(
                "ignoring AMQP method", metadata: ["amqp.method": "\(method.id)", "amqp.channel": "\(channel)"])
        }
    }

    private func settle(channel: UInt16, tag: UInt64, multiple: Bool, nack: Bool) {
        guard var confirms = channels[channel]?.confirms else { return }
        let resolutions =
            nack ? confirms.nack(tag: tag, multiple: multiple) : confirms.ack(tag: tag, multiple: multiple)
        channels[channel]?.confirms = confirms
        for resolution in resolutions {
            switch resolution.outcome {
            case .confirmed:
                confirmedCounter.increment()
                resolution.waiter.resume(returning: .done)
            case .nacked:
                failedPublishCounter.increment()
                resolution.waiter.resume(
                    throwing: AMQPError(.publishNacked, "the broker refused the message (basic.nack)"))
            case .returned(let replyCode, let replyText):
                failedPublishCounter.increment()
                resolution.waiter.resume(
                    throwing: AMQPError(
                        .publishReturned, "the message was returned unroutable: \(replyText)", replyCode: replyCode))
            }
        }
    }

    private func handleReturn(channel: UInt16, replyCode: UInt16, replyText: String) {
        guard let connection else { return }
        var message = amqp_message_t()
        let reply = amqp_read_message(connection, channel, &message, 0)
        if replyError(reply, what: "basic.return content", channel: channel) != nil { return }
        let headers = AMQPProperties(message.properties).headers
        amqp_destroy_message(&message)
        guard let value = headers?[Self.returnTagHeader], let tag = value.intValue else {
            logger.warning("returned message without a publish tag", metadata: ["amqp.reply_text": "\(replyText)"])
            return
        }
        channels[channel]?.confirms?.returned(tag: UInt64(tag), replyCode: replyCode, replyText: replyText)
    }
}
