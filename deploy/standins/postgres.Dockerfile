# Stand-in for the official `postgres` image, used only where no registry can be reached (scripts/compose-test):
# Debian's PostgreSQL 15 on a local Debian base. Like the official image it creates POSTGRES_USER (password
# POSTGRES_PASSWORD) and POSTGRES_DB in an empty /var/lib/postgresql/data on first start, listens on 5432 with
# password authentication, and stops on SIGINT (fast shutdown).
ARG BASE=badgepipe-standin/debian:bookworm
FROM ${BASE}
RUN printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d \
    && apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null \
    && rm -rf /var/lib/apt/lists/* /var/lib/postgresql/15 /etc/postgresql/15 \
    && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
    && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PGDATA=/var/lib/postgresql/data
USER postgres
STOPSIGNAL SIGINT
EXPOSE 5432
ENTRYPOINT ["postgres-entrypoint.sh"]
CMD ["postgres"]
