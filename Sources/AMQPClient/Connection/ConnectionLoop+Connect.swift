import CRabbitMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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
