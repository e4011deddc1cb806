import BadgeSupport
import CRabbitMQ
import Logging
import Metrics
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The thread that owns one rabbitmq-c connection for its whole life.
///
/// rabbitmq-c connections are not thread-safe, and heartbeats are serviced only inside library calls, so a
/// dedicated thread loops: run the queued commands, read every frame the broker sent (messages, confirms,
/// returns, closes, heartbeats), then `poll` the socket and the mailbox's wake pipe. Everything else in the
/// program talks to it through the `Mailbox`. `@unchecked Sendable` because it is handed to its thread once and
/// only that thread touches it afterwards.
final class ConnectionLoop: @unchecked Sendable {
    /// State of one open channel.
    struct ChannelState {
        var confirms: ConfirmTracker<Command.Promise>?
        var consumers: [String: AMQPMessageHandler] = [:]
        /// Set once the channel is closed (by the broker or the application): why.
        var closed: AMQPError?
        /// Set while the application closes the channel: messages that still arrive are not handed out.
        var closing = false
        /// `basic.qos` requests sent and not yet answered, oldest first: each `qos-ok` answers the first. One entry
        /// a request; a worker's partition sends one at most a batch, when its prefetch changes.
        var qosWaiters: [Command.Promise?] = []
    }

    /// Header that carries the delivery tag of a mandatory publish, so that a `basic.return` (which carries no
    /// tag) can be matched to its message.
    static let returnTagHeader = AMQPProperties.publishTagHeader

    let configuration: AMQPConfiguration
    let mailbox: Mailbox
    let signal: CloseSignal<AMQPError?>
    let events: AsyncStream<AMQPConnectionEvent>.Continuation
    var logger: Logger

    var connection: amqp_connection_state_t?
    var channels: [UInt16: ChannelState] = [:]
    var lastChannelID: UInt16 = 0
    var negotiatedHeartbeat: Int = 0
    var negotiatedChannelMax: Int = 0
    /// The broker's `connection.start` server properties (`product`, `version`, `cluster_name`, …).
    var serverProperties: AMQPTable = [:]
    /// Monotonic time (ns) when the broker last sent anything.
    var lastInbound: UInt64 = 0

    let publishedCounter = Counter(label: "amqp_messages_published_total")
    let confirmedCounter = Counter(label: "amqp_messages_confirmed_total")
    let failedPublishCounter = Counter(label: "amqp_messages_publish_failed_total")
    let deliveredCounter = Counter(label: "amqp_messages_delivered_total")
    let connectionLostCounter = Counter(label: "amqp_connections_lost_total")

    init(
        configuration: AMQPConfiguration,
        mailbox: Mailbox,
        signal: CloseSignal<AMQPError?>,
        events: AsyncStream<AMQPConnectionEvent>.Continuation,
        logger: Logger
    ) {
        self.configuration = configuration
        self.mailbox = mailbox
        self.signal = signal
        self.events = events
        self.logger = logger
    }

    /// The thread's body: connect, report the outcome, then serve until the connection ends.
    /// What login agreed with the broker.
    struct Negotiated: Sendable {
        var heartbeat: Int
        var channelMax: Int
        var serverProperties: AMQPTable
    }

    func main(started: CheckedContinuation<Negotiated, any Error>) {
        do {
            try connect()
        } catch {
            let failure = error
            _ = mailbox.finish(failure)
            signal.resolve(failure)
            events.finish()
            started.resume(throwing: failure)
            return
        }
        started.resume(
            returning: Negotiated(
                heartbeat: negotiatedHeartbeat, channelMax: negotiatedChannelMax, serverProperties: serverProperties))
        lastInbound = Self.monotonicNanoseconds()
        while connection != nil {
            for command in mailbox.takeAll() {
                if connection == nil {
                    command.fail(mailbox.finishedError ?? AMQPError(.connectionLost, "connection is gone"))
                } else {
                    execute(command)
                }
            }
            guard connection != nil else { break }
            pumpIncoming()
            guard connection != nil else { break }
            waitForActivity()
        }
    }

    /// Waits until the socket is readable, a command arrives, or it is time to service heartbeats.
    private func waitForActivity() {
        guard let connection else { return }
        if amqp_frames_enqueued(connection) != 0 || amqp_data_in_buffer(connection) != 0 { return }
        var fds = [
            pollfd(fd: amqp_get_sockfd(connection), events: Int16(POLLIN), revents: 0),
            pollfd(fd: mailbox.wakeReadFD, events: Int16(POLLIN), revents: 0),
        ]
        // A short timeout keeps heartbeats flowing: rabbitmq-c sends them from inside its read calls.
        let timeoutMilliseconds: Int32 = configuration.tls == nil ? 200 : 50
        let ready = poll(&fds, nfds_t(fds.count), timeoutMilliseconds)
        if ready > 0, fds[0].revents != 0 {
            lastInbound = Self.monotonicNanoseconds()
        }
        checkHeartbeatTimeout()
    }

    /// rabbitmq-c only notices a silent broker inside a blocking wait, and this loop never blocks in one, so the
    /// receive side of the heartbeat contract is enforced here: two intervals without a byte from the broker
    /// means it is gone.
    private func checkHeartbeatTimeout() {
        guard negotiatedHeartbeat > 0, connection != nil else { return }
        let silence = Self.monotonicNanoseconds() &- lastInbound
        let limit = UInt64(negotiatedHeartbeat) * 2 * 1_000_000_000
        if silence > limit {
            fatal(
                AMQPError(
                    .connectionLost,
                    "missed heartbeats: nothing from the broker for \(silence / 1_000_000) ms"
                        + " (heartbeat \(negotiatedHeartbeat) s)"))
        }
    }

    /// Ends the connection because of `error`: every waiter, publish and consumer learns why.
    func fatal(_ error: AMQPError) {
        guard let connection else { return }
        if error.code != .closedByClient {
            connectionLostCounter.increment()
            logger.warning(
                "AMQP connection ended",
                metadata: ["amqp.error.code": "\(error.code)", "amqp.error.message": "\(error.message)"])
        }
        amqp_destroy_connection(connection)
        self.connection = nil
        endAllChannels(error)
        for command in mailbox.finish(error) { command.fail(error) }
        let reported: AMQPError? = error.code == .closedByClient ? nil : error
        signal.resolve(reported)
        events.yield(.closed(reported))
        events.finish()
    }

    /// Fails everything that belongs to every channel.
    private func endAllChannels(_ error: AMQPError) {
        for id in channels.keys { endChannel(id, error) }
    }

    /// Marks a channel closed: unconfirmed publishes fail, consumers end.
    func endChannel(_ id: UInt16, _ error: AMQPError) {
        guard var state = channels[id], state.closed == nil else { return }
        let unconfirmedError: AMQPError
        if error.code == .closedByClient {
            unconfirmedError = AMQPError(.publishUnconfirmed, "the channel was closed before the broker confirmed")
        } else {
            unconfirmedError = AMQPError(
                .publishUnconfirmed, "no confirm before the channel ended: \(error.message)", replyCode: error.replyCode
            )
        }
        if var confirms = state.confirms {
            let pending = confirms.failAll()
            failedPublishCounter.increment(by: pending.count)
            for entry in pending { entry.waiter.resume(throwing: unconfirmedError) }
            state.confirms = confirms
        }
        for waiter in state.qosWaiters { waiter?.resume(throwing: error) }
        state.qosWaiters = []
        for (_, handler) in state.consumers {
            handler.end(error.code == .closedByClient ? nil : error)
        }
        state.consumers = [:]
        state.closed = error
        channels[id] = state
    }

    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// rabbitmq-c's text for a status code.
    static func statusText(_ status: Int32) -> String {
        guard let text = amqp_error_string2(status) else { return "status \(status)" }
        return String(cString: text)
    }
}

extension ConnectionLoop {
    /// Opens the socket (TCP or TLS), logs in with the client capabilities, and applies timeouts.
    func connect() throws(AMQPError) {
        // A write to a socket the broker closed must be an error, not a signal that kills the process.
        Self.ignoreSIGPIPE()

        guard let state = amqp_new_connection() else { throw AMQPError(.library, "amqp_new_connection failed") }
        var succeeded = false
        defer { if !succeeded { amqp_destroy_connection(state) } }

        let socket: OpaquePointer?
        if let tls = configuration.tls {
            socket = amqp_ssl_socket_new(state)
            guard let socket else { throw AMQPError(.tls, "could not create a TLS socket") }
            if let path = tls.caCertificatePath {
                let status = amqp_ssl_socket_set_cacert(socket, path)
                guard status == AMQP_STATUS_OK.rawValue else {
                    throw AMQPError(.tls, "CA certificates \(path): \(Self.statusText(status))")
                }
            }
            if let certificate = tls.certificatePath, let key = tls.keyPath {
                let status = amqp_ssl_socket_set_key(socket, certificate, key)
                guard status == AMQP_STATUS_OK.rawValue else {
                    throw AMQPError(.tls, "client certificate \(certificate): \(Self.statusText(status))")
                }
            }
            amqp_ssl_socket_set_verify_peer(socket, tls.verifyPeer ? 1 : 0)
            amqp_ssl_socket_set_verify_hostname(socket, tls.verifyHostname ? 1 : 0)
        } else {
            socket = amqp_tcp_socket_new(state)
            guard socket != nil else { throw AMQPError(.library, "could not create a TCP socket") }
        }

        var connectTimeout = Self.timeval(seconds: configuration.connectTimeoutSeconds)
        let openStatus = amqp_socket_open_noblock(
            socket, configuration.host, Int32(configuration.port), &connectTimeout)
        guard openStatus == AMQP_STATUS_OK.rawValue else {
            let code: AMQPError.Code =
                openStatus == AMQP_STATUS_SSL_ERROR.rawValue
                    || openStatus == AMQP_STATUS_SSL_HOSTNAME_VERIFY_FAILED.rawValue
                    || openStatus == AMQP_STATUS_SSL_PEER_VERIFY_FAILED.rawValue
                    || openStatus == AMQP_STATUS_SSL_CONNECTION_FAILED.rawValue
                ? .tls : .connectionFailed
            throw AMQPError(
                code, "cannot connect to \(configuration.host):\(configuration.port): \(Self.statusText(openStatus))")
        }

        var handshakeTimeout = Self.timeval(seconds: configuration.connectTimeoutSeconds)
        _ = amqp_set_handshake_timeout(state, &handshakeTimeout)

        let arena = CArena()
        let capabilities: AMQPTable = [
            "publisher_confirms": true,
            "consumer_cancel_notify": true,
            "basic.nack": true,
            "connection.blocked": true,
            "authentication_failure_close": true,
            "exchange_exchange_bindings": true,
            "per_consumer_qos": true,
            "consumer_priorities": true,
        ]
        var clientProperties: AMQPTable = [
            "product": "badgepipe AMQPClient",
            "platform": "Swift",
            "capabilities": .table(capabilities),
        ]
        if let name = configuration.connectionName { clientProperties["connection_name"] = .string(name) }
        var propertiesTable = arena.table(clientProperties)

        let reply = badgepipe_amqp_login_plain(
            state, configuration.virtualHost, Int32(configuration.channelMax), Int32(configuration.frameMax),
            Int32(configuration.heartbeatSeconds), &propertiesTable, configuration.username, configuration.password)
        if reply.reply_type != AMQP_RESPONSE_NORMAL {
            throw loginError(reply)
        }

        var rpcTimeout = Self.timeval(seconds: configuration.rpcTimeoutSeconds)
        _ = amqp_set_rpc_timeout(state, &rpcTimeout)

        negotiatedHeartbeat = Int(amqp_get_heartbeat(state))
        negotiatedChannelMax = Int(amqp_get_channel_max(state))
        if let properties = amqp_get_server_properties(state) { serverProperties = AMQPTable(properties.pointee) }
        connection = state
        succeeded = true
        logger[metadataKey: "amqp.host"] = "\(configuration.host):\(configuration.port)"
        logger.debug(
            "AMQP connection open",
            metadata: ["amqp.heartbeat": "\(negotiatedHeartbeat)", "amqp.vhost": "\(configuration.virtualHost)"])
    }

    private func loginError(_ reply: amqp_rpc_reply_t) -> AMQPError {
        if reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION, reply.reply.id == BADGEPIPE_CONNECTION_CLOSE_METHOD,
            let decoded = reply.reply.decoded
        {
            let close = decoded.assumingMemoryBound(to: amqp_connection_close_t.self).pointee
            let text = close.reply_text.string
            let code: AMQPError.Code =
                close.reply_code == 403 || close.reply_code == 530
                ? .authenticationFailed
                : .connectionClosed
            return AMQPError(
                code, "login to vhost \"\(configuration.virtualHost)\" refused: \(text)",
                replyCode: close.reply_code)
        }
        if reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION {
            let text = Self.statusText(reply.library_error)
            if reply.library_error == AMQP_STATUS_CONNECTION_CLOSED.rawValue
                || reply.library_error == AMQP_STATUS_SOCKET_CLOSED.rawValue
            {
                return AMQPError(.connectionFailed, "the broker closed the connection during login: \(text)")
            }
            return AMQPError(.connectionFailed, "login failed: \(text)")
        }
        return AMQPError(.connectionFailed, "login failed")
    }

    static func ignoreSIGPIPE() {
        #if canImport(Glibc)
            _ = Glibc.signal(SIGPIPE, SIG_IGN)
        #else
            _ = Darwin.signal(SIGPIPE, SIG_IGN)
        #endif
    }

    static func timeval(seconds: Double) -> timeval {
        let whole = Int(seconds)
        let micros = Int((seconds - Double(whole)) * 1_000_000)
        #if canImport(Glibc)
            return Glibc.timeval(tv_sec: whole, tv_usec: micros)
        #else
            return Darwin.timeval(tv_sec: whole, tv_usec: Int32(micros))
        #endif
    }
}

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
        case BADGEPIPE_BASIC_QOS_OK_METHOD:
            guard channels[channel]?.qosWaiters.isEmpty == false else { return }
            channels[channel]?.qosWaiters.removeFirst()?.resume(returning: .done)
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
            // Sent without waiting for its answer: rabbitmq-c's synchronous call would read and keep every frame
            // that arrives meanwhile, each channel's frames in that channel's memory pool, which is reused only
            // once none of its frames waits and keeps its peak for the connection's life. A consumer's prefetch
            // changes while its messages stream in, so on a busy broker every body that arrived during the wait
            // would stay in memory (docs/performance.md). `qos-ok` answers the command when `pumpIncoming` reads
            // it (`handle`).
            var request = amqp_basic_qos_t(prefetch_size: 0, prefetch_count: prefetchCount, global: flag(global))
            let status = amqp_send_method(connection, channel, BADGEPIPE_BASIC_QOS_METHOD, &request)
            if let error = statusError(status, what: "basic.qos") { return answer(error) }
            channels[channel]?.qosWaiters.append(command.promise)
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

/// The only way into a connection's thread: commands are queued under a lock and the thread is woken
/// through a pipe that it polls together with the broker's socket.
final class Mailbox: Sendable {
    private struct State {
        var commands: [Command] = []
        var wakePending = false
        var finished: AMQPError?
    }

    private let state = Mutex(State())
    /// Read end, polled by the connection thread.
    let wakeReadFD: Int32
    private let wakeWriteFD: Int32

    init() throws(AMQPError) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw AMQPError(.library, "pipe() failed: errno \(errno)") }
        for fd in fds {
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeReadFD = fds[0]
        wakeWriteFD = fds[1]
    }

    deinit {
        close(wakeReadFD)
        close(wakeWriteFD)
    }

    /// Queues a command; when the connection has ended the command fails at once with the reason.
    func submit(_ command: Command) {
        enum Decision {
            case wake
            case queued
            case rejected(AMQPError)
        }
        let decision = state.withLock { state -> Decision in
            if let finished = state.finished { return .rejected(finished) }
            state.commands.append(command)
            if state.wakePending { return .queued }
            state.wakePending = true
            return .wake
        }
        switch decision {
        case .wake:
            var byte: UInt8 = 1
            _ = write(wakeWriteFD, &byte, 1)
        case .queued:
            break
        case .rejected(let error):
            command.fail(error)
        }
    }

    /// Takes every queued command (thread side).
    func takeAll() -> [Command] {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(wakeReadFD, &buffer, buffer.count) > 0 {}
        return state.withLock { state in
            state.wakePending = false
            let commands = state.commands
            state.commands.removeAll(keepingCapacity: true)
            return commands
        }
    }

    /// Marks the connection ended; later submissions fail with `error`. Returns what was still queued.
    func finish(_ error: AMQPError) -> [Command] {
        state.withLock { state in
            state.finished = error
            let commands = state.commands
            state.commands = []
            return commands
        }
    }

    /// The reason the connection ended, if it has.
    var finishedError: AMQPError? { state.withLock { $0.finished } }
}
