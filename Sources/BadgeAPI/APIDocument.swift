/// The API's OpenAPI document, served at `/openapi.json`: the description of every route, status and body of
/// contract section 7 that the API serves (its tests check the router against it).
enum APIDocument {
    static let text = #"""
        {
         "openapi": "3.1.0",
         "info": {
          "title": "BadgePipe app API",
          "version": "1.2.0",
          "description": "The app's API of the BadgePipe contract, section 7: a user's counts, notifications and conversations, writes published as events, and a live stream of counts. Every /v1 request carries Authorization: Bearer <JWT> signed by the app's backend (sub = the user)."
         },
         "components": {
          "securitySchemes": {
           "bearer": {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT"
           }
          },
          "schemas": {
           "Counts": {
            "type": "object",
            "required": [
             "unread_notifications",
             "unseen_notifications",
             "unread_messages",
             "badge",
             "badge_version"
            ],
            "properties": {
             "unread_notifications": {
              "type": "integer",
              "minimum": 0
             },
             "unseen_notifications": {
              "type": "integer",
              "minimum": 0
             },
             "unread_messages": {
              "type": "integer",
              "minimum": 0
             },
             "badge": {
              "type": "integer",
              "minimum": 0
             },
             "badge_version": {
              "type": "integer",
              "minimum": 0
             }
            }
           },
           "Error": {
            "type": "object",
            "required": [
             "error",
             "message"
            ],
            "properties": {
             "error": {
              "type": "string"
             },
             "message": {
              "type": "string"
             }
            }
           },
           "Notification": {
            "type": "object",
            "required": [
             "id",
             "type",
             "occurred_at",
             "read",
             "seen"
            ],
            "properties": {
             "id": {
              "type": "string"
             },
             "type": {
              "type": [
               "string",
               "null"
              ]
             },
             "occurred_at": {
              "type": "string",
              "format": "date-time"
             },
             "read": {
              "type": "boolean"
             },
             "seen": {
              "type": "boolean"
             },
             "actor": {
              "type": "object"
             },
             "post_id": {
              "type": "string"
             },
             "comment_id": {
              "type": "string"
             },
             "conversation_id": {
              "type": "string"
             },
             "title": {
              "type": "string"
             },
             "text": {
              "type": "string"
             }
            }
           },
           "Conversation": {
            "type": "object",
            "required": [
             "conversation_id",
             "unread_messages",
             "last_message_at"
            ],
            "properties": {
             "conversation_id": {
              "type": "string"
             },
             "unread_messages": {
              "type": "integer"
             },
             "last_message_at": {
              "type": "string",
              "format": "date-time"
             }
            }
           },
           "Accepted": {
            "type": "object",
            "required": [
             "event_id"
            ],
            "properties": {
             "event_id": {
              "type": "string"
             }
            }
           }
          }
         },
         "paths": {
          "/v1/me/counts": {
           "get": {
            "summary": "The user's counts",
            "security": [
             {
              "bearer": []
             }
            ],
            "parameters": [
             {
              "name": "If-None-Match",
              "in": "header",
              "schema": {
               "type": "string"
              }
             }
            ],
            "responses": {
             "200": {
              "description": "the counts",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Counts"
                }
               }
              },
              "headers": {
               "ETag": {
                "schema": {
                 "type": "string"
                },
                "description": "\"<badge_version>\""
               }
              }
             },
             "304": {
              "description": "the counts are still at the version of If-None-Match"
             },
             "503": {
              "description": "the database cannot be read now",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "401": {
              "description": "missing, malformed, expired, wrongly signed or wrong-audience token (WWW-Authenticate: Bearer error=\"invalid_token\")",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             }
            }
           }
          },
          "/v1/me/notifications": {
           "get": {
            "summary": "The user's notifications, newest first",
            "security": [
             {
              "bearer": []
             }
            ],
            "parameters": [
             {
              "name": "limit",
              "in": "query",
              "schema": {
               "type": "integer",
               "minimum": 1,
               "maximum": 100,
               "default": 20
              }
             },
             {
              "name": "before",
              "in": "query",
              "schema": {
               "type": "string"
              }
             },
             {
              "name": "unread_only",
              "in": "query",
              "schema": {
               "type": "boolean"
              }
             }
            ],
            "responses": {
             "200": {
              "description": "one page",
              "content": {
               "application/json": {
                "schema": {
                 "type": "object",
                 "required": [
                  "notifications",
                  "next",
                  "counts"
                 ],
                 "properties": {
                  "notifications": {
                   "type": "array",
                   "items": {
                    "$ref": "#/components/schemas/Notification"
                   }
                  },
                  "next": {
                   "type": [
                    "string",
                    "null"
                   ]
                  },
                  "counts": {
                   "$ref": "#/components/schemas/Counts"
                  }
                 }
                }
               }
              }
             },
             "400": {
              "description": "a bad limit or cursor",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "503": {
              "description": "the database cannot be read now",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "401": {
              "description": "missing, malformed, expired, wrongly signed or wrong-audience token (WWW-Authenticate: Bearer error=\"invalid_token\")",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             }
            }
           }
          },
          "/v1/me/conversations": {
           "get": {
            "summary": "Conversations with unread messages, latest first",
            "security": [
             {
              "bearer": []
             }
            ],
            "parameters": [
             {
              "name": "limit",
              "in": "query",
              "schema": {
               "type": "integer",
               "minimum": 1,
               "maximum": 100,
               "default": 20
              }
             },
             {
              "name": "before",
              "in": "query",
              "schema": {
               "type": "string"
              }
             }
            ],
            "responses": {
             "200": {
              "description": "one page",
              "content": {
               "application/json": {
                "schema": {
                 "type": "object",
                 "required": [
                  "conversations",
                  "next"
                 ],
                 "properties": {
                  "conversations": {
                   "type": "array",
                   "items": {
                    "$ref": "#/components/schemas/Conversation"
                   }
                  },
                  "next": {
                   "type": [
                    "string",
                    "null"
                   ]
                  }
                 }
                }
               }
              }
             },
             "400": {
              "description": "a bad limit or cursor",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "503": {
              "description": "the database cannot be read now",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "401": {
              "description": "missing, malformed, expired, wrongly signed or wrong-audience token (WWW-Authenticate: Bearer error=\"invalid_token\")",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             }
            }
           }
          },
          "/v1/me/notifications/read": {
           "post": {
            "summary": "Publishes notification_read",
            "security": [
             {
              "bearer": []
             }
            ],
            "parameters": [
             {
              "name": "Idempotency-Key",
              "in": "header",
              "required": false,
              "schema": {
               "type": "string",
               "minLength": 1,
               "maxLength": 128
              }
             }
            ],
            "responses": {
             "202": {
              "description": "published and confirmed by the broker",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Accepted"
                }
               }
              }
             },
             "400": {
              "description": "the body would make an invalid event; nothing published",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "413": {
              "description": "the body is too large",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "415": {
              "description": "the body is not application/json",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "503": {
              "description": "the broker did not confirm; nothing published",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "401": {
              "description": "missing, malformed, expired, wrongly signed or wrong-audience token (WWW-Authenticate: Bearer error=\"invalid_token\")",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             }
            },
            "requestBody": {
             "required": false,
             "content": {
              "application/json": {
               "schema": {
                "type": "object",
                "required": [
                 "ids"
                ],
                "properties": {
                 "ids": {
                  "type": "array",
                  "items": {
                   "type": "string"
                  },
                  "minItems": 1,
                  "maxItems": 500
                 }
                }
               }
              }
             }
            }
           }
          },
          "/v1/me/notifications/read-all": {
           "post": {
            "summary": "Publishes notifications_read_all",
            "security": [
             {
              "bearer": []
             }
            ],
            "parameters": [
             {
              "name": "Idempotency-Key",
              "in": "header",
              "required": false,
              "schema": {
               "type": "string",
               "minLength": 1,
               "maxLength": 128
              }
             }
            ],
            "responses": {
             "202": {
              "description": "published and confirmed by the broker",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Accepted"
                }
               }
              }
             },
             "400": {
              "description": "the body would make an invalid event; nothing published",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "413": {
              "description": "the body is too large",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "415": {
              "description": "the body is not application/json",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "503": {
              "description": "the broker did not confirm; nothing published",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "401": {
              "description": "missing, malformed, expired, wrongly signed or wrong-audience token (WWW-Authenticate: Bearer error=\"invalid_token\")",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             }
            },
            "requestBody": {
             "required": false,
             "content": {
              "application/json": {
               "schema": {
                "type": "object",
                "properties": {
                 "until": {
                  "type": "string",
                  "format": "date-time"
                 }
                }
               }
              }
             }
            }
           }
          },
          "/v1/me/notifications/opened": {
           "post": {
            "summary": "Publishes notifications_opened",
            "security": [
             {
              "bearer": []
             }
            ],
            "parameters": [
             {
              "name": "Idempotency-Key",
              "in": "header",
              "required": false,
              "schema": {
               "type": "string",
               "minLength": 1,
               "maxLength": 128
              }
             }
            ],
            "responses": {
             "202": {
              "description": "published and confirmed by the broker",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Accepted"
                }
               }
              }
             },
             "400": {
              "description": "the body would make an invalid event; nothing published",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "413": {
              "description": "the body is too large",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "415": {
              "description": "the body is not application/json",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "503": {
              "description": "the broker did not confirm; nothing published",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "401": {
              "description": "missing, malformed, expired, wrongly signed or wrong-audience token (WWW-Authenticate: Bearer error=\"invalid_token\")",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             }
            },
            "requestBody": {
             "required": false,
             "content": {
              "application/json": {
               "schema": {
                "type": "object",
                "properties": {
                 "until": {
                  "type": "string",
                  "format": "date-time"
                 }
                }
               }
              }
             }
            }
           }
          },
          "/v1/me/conversations/{conversation_id}/read": {
           "post": {
            "summary": "Publishes conversation_read",
            "security": [
             {
              "bearer": []
             }
            ],
            "parameters": [
             {
              "name": "Idempotency-Key",
              "in": "header",
              "required": false,
              "schema": {
               "type": "string",
               "minLength": 1,
               "maxLength": 128
              }
             },
             {
              "name": "conversation_id",
              "in": "path",
              "required": true,
              "schema": {
               "type": "string"
              }
             }
            ],
            "responses": {
             "202": {
              "description": "published and confirmed by the broker",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Accepted"
                }
               }
              }
             },
             "400": {
              "description": "the body would make an invalid event; nothing published",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "413": {
              "description": "the body is too large",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "415": {
              "description": "the body is not application/json",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "503": {
              "description": "the broker did not confirm; nothing published",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "401": {
              "description": "missing, malformed, expired, wrongly signed or wrong-audience token (WWW-Authenticate: Bearer error=\"invalid_token\")",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             }
            },
            "requestBody": {
             "required": false,
             "content": {
              "application/json": {
               "schema": {
                "type": "object",
                "properties": {
                 "until": {
                  "type": "string",
                  "format": "date-time"
                 }
                }
               }
              }
             }
            }
           }
          },
          "/v1/me/devices": {
           "post": {
            "summary": "Publishes device_registered",
            "security": [
             {
              "bearer": []
             }
            ],
            "parameters": [
             {
              "name": "Idempotency-Key",
              "in": "header",
              "required": false,
              "schema": {
               "type": "string",
               "minLength": 1,
               "maxLength": 128
              }
             }
            ],
            "responses": {
             "202": {
              "description": "published and confirmed by the broker",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Accepted"
                }
               }
              }
             },
             "400": {
              "description": "the body would make an invalid event; nothing published",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "413": {
              "description": "the body is too large",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "415": {
              "description": "the body is not application/json",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "503": {
              "description": "the broker did not confirm; nothing published",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "401": {
              "description": "missing, malformed, expired, wrongly signed or wrong-audience token (WWW-Authenticate: Bearer error=\"invalid_token\")",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             }
            },
            "requestBody": {
             "required": false,
             "content": {
              "application/json": {
               "schema": {
                "type": "object",
                "required": [
                 "token",
                 "provider"
                ],
                "properties": {
                 "token": {
                  "type": "string"
                 },
                 "provider": {
                  "type": "string",
                  "enum": [
                   "apns",
                   "fcm"
                  ]
                 },
                 "topic": {
                  "type": "string"
                 },
                 "environment": {
                  "type": "string",
                  "enum": [
                   "production",
                   "sandbox"
                  ]
                 },
                 "app": {
                  "type": "string"
                 }
                }
               }
              }
             }
            }
           }
          },
          "/v1/me/devices/{token}": {
           "delete": {
            "summary": "Publishes device_unregistered",
            "security": [
             {
              "bearer": []
             }
            ],
            "parameters": [
             {
              "name": "Idempotency-Key",
              "in": "header",
              "required": false,
              "schema": {
               "type": "string",
               "minLength": 1,
               "maxLength": 128
              }
             },
             {
              "name": "token",
              "in": "path",
              "required": true,
              "schema": {
               "type": "string"
              }
             }
            ],
            "responses": {
             "202": {
              "description": "published and confirmed by the broker",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Accepted"
                }
               }
              }
             },
             "400": {
              "description": "the body would make an invalid event; nothing published",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "413": {
              "description": "the body is too large",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "415": {
              "description": "the body is not application/json",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "503": {
              "description": "the broker did not confirm; nothing published",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "401": {
              "description": "missing, malformed, expired, wrongly signed or wrong-audience token (WWW-Authenticate: Bearer error=\"invalid_token\")",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             }
            }
           }
          },
          "/v1/me/preferences": {
           "put": {
            "summary": "Publishes preferences_updated",
            "security": [
             {
              "bearer": []
             }
            ],
            "parameters": [
             {
              "name": "Idempotency-Key",
              "in": "header",
              "required": false,
              "schema": {
               "type": "string",
               "minLength": 1,
               "maxLength": 128
              }
             }
            ],
            "responses": {
             "202": {
              "description": "published and confirmed by the broker",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Accepted"
                }
               }
              }
             },
             "400": {
              "description": "the body would make an invalid event; nothing published",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "413": {
              "description": "the body is too large",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "415": {
              "description": "the body is not application/json",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "503": {
              "description": "the broker did not confirm; nothing published",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "401": {
              "description": "missing, malformed, expired, wrongly signed or wrong-audience token (WWW-Authenticate: Bearer error=\"invalid_token\")",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             }
            },
            "requestBody": {
             "required": false,
             "content": {
              "application/json": {
               "schema": {
                "type": "object",
                "properties": {
                 "badge_enabled": {
                  "type": "boolean"
                 },
                 "previews": {
                  "type": "boolean"
                 }
                }
               }
              }
             }
            }
           }
          },
          "/v1/me/stream": {
           "get": {
            "summary": "Server-Sent Events: counts (id = badge_version) and new notifications",
            "security": [
             {
              "bearer": []
             }
            ],
            "parameters": [
             {
              "name": "access_token",
              "in": "query",
              "schema": {
               "type": "string"
              },
              "description": "the token, for EventSource, which cannot send headers"
             },
             {
              "name": "Last-Event-ID",
              "in": "header",
              "schema": {
               "type": "string"
              }
             }
            ],
            "responses": {
             "200": {
              "description": "the stream",
              "content": {
               "text/event-stream": {
                "schema": {
                 "type": "string"
                }
               }
              }
             },
             "429": {
              "description": "too many open streams for this user",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "503": {
              "description": "this instance has no room for another stream",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             },
             "401": {
              "description": "missing, malformed, expired, wrongly signed or wrong-audience token (WWW-Authenticate: Bearer error=\"invalid_token\")",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             }
            }
           }
          },
          "/healthz": {
           "get": {
            "summary": "Liveness",
            "responses": {
             "200": {
              "description": "alive"
             }
            }
           }
          },
          "/readyz": {
           "get": {
            "summary": "Readiness: the database answers",
            "responses": {
             "200": {
              "description": "ready"
             },
             "503": {
              "description": "not ready",
              "content": {
               "application/json": {
                "schema": {
                 "$ref": "#/components/schemas/Error"
                }
               }
              }
             }
            }
           }
          },
          "/metrics": {
           "get": {
            "summary": "Prometheus metrics: open streams, count changes found, writes by event type",
            "responses": {
             "200": {
              "description": "the metrics in Prometheus's text format",
              "content": {
               "text/plain": {
                "schema": {
                 "type": "string"
                }
               }
              }
             }
            }
           }
          },
          "/openapi.json": {
           "get": {
            "summary": "This document",
            "responses": {
             "200": {
              "description": "the document"
             }
            }
           }
          }
         }
        }
        """#
}
