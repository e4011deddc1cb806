import BadgeCore
import PostgresNIO
import SQLiteNIO
