#ifndef BADGEPIPE_CRABBITMQ_SHIM_H
#define BADGEPIPE_CRABBITMQ_SHIM_H

#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_tcp_socket.h>
#include <amqp_ssl_socket.h>

/// Swift cannot call C variadic functions: this wraps amqp_login_with_properties for SASL PLAIN.
static inline amqp_rpc_reply_t badgepipe_amqp_login_plain(amqp_connection_state_t state, char const *vhost,
                                                          int channel_max, int frame_max, int heartbeat,
                                                          amqp_table_t const *properties, char const *user,
                                                          char const *password) {
    return amqp_login_with_properties(state, vhost, channel_max, frame_max, heartbeat, properties,
                                      AMQP_SASL_METHOD_PLAIN, user, password);
}

/// Swift cannot call C variadic functions: this wraps amqp_login_with_properties for SASL EXTERNAL.
static inline amqp_rpc_reply_t badgepipe_amqp_login_external(amqp_connection_state_t state, char const *vhost,
                                                             int channel_max, int frame_max, int heartbeat,
                                                             amqp_table_t const *properties, char const *identity) {
    return amqp_login_with_properties(state, vhost, channel_max, frame_max, heartbeat, properties,
                                      AMQP_SASL_METHOD_EXTERNAL, identity);
}


/// Method ids as constants: the AMQP_*_METHOD macros contain casts, which Swift does not import.
static const amqp_method_number_t BADGEPIPE_BASIC_ACK_METHOD = AMQP_BASIC_ACK_METHOD;
static const amqp_method_number_t BADGEPIPE_BASIC_NACK_METHOD = AMQP_BASIC_NACK_METHOD;
static const amqp_method_number_t BADGEPIPE_BASIC_RETURN_METHOD = AMQP_BASIC_RETURN_METHOD;
static const amqp_method_number_t BADGEPIPE_BASIC_DELIVER_METHOD = AMQP_BASIC_DELIVER_METHOD;
static const amqp_method_number_t BADGEPIPE_BASIC_CANCEL_METHOD = AMQP_BASIC_CANCEL_METHOD;
static const amqp_method_number_t BADGEPIPE_BASIC_QOS_METHOD = AMQP_BASIC_QOS_METHOD;
static const amqp_method_number_t BADGEPIPE_BASIC_QOS_OK_METHOD = AMQP_BASIC_QOS_OK_METHOD;
static const amqp_method_number_t BADGEPIPE_BASIC_GET_OK_METHOD = AMQP_BASIC_GET_OK_METHOD;
static const amqp_method_number_t BADGEPIPE_BASIC_GET_EMPTY_METHOD = AMQP_BASIC_GET_EMPTY_METHOD;
static const amqp_method_number_t BADGEPIPE_CHANNEL_CLOSE_METHOD = AMQP_CHANNEL_CLOSE_METHOD;
static const amqp_method_number_t BADGEPIPE_CHANNEL_CLOSE_OK_METHOD = AMQP_CHANNEL_CLOSE_OK_METHOD;
static const amqp_method_number_t BADGEPIPE_CONNECTION_CLOSE_METHOD = AMQP_CONNECTION_CLOSE_METHOD;
static const amqp_method_number_t BADGEPIPE_CONNECTION_CLOSE_OK_METHOD = AMQP_CONNECTION_CLOSE_OK_METHOD;
static const amqp_method_number_t BADGEPIPE_CONNECTION_BLOCKED_METHOD = AMQP_CONNECTION_BLOCKED_METHOD;
static const amqp_method_number_t BADGEPIPE_CONNECTION_UNBLOCKED_METHOD = AMQP_CONNECTION_UNBLOCKED_METHOD;
static const amqp_method_number_t BADGEPIPE_CHANNEL_FLOW_METHOD = AMQP_CHANNEL_FLOW_METHOD;

#endif
