import CRabbitMQ

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
