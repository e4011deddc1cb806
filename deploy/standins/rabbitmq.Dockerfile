# Stand-in for the official `rabbitmq` image, used only where no registry can be reached (scripts/compose-test):
# Debian's rabbitmq-server package on a local Debian base. It runs the same server with the same mounted
# enabled_plugins and rabbitmq.conf, on the same port, data directory and healthcheck command.
ARG BASE=badgepipe-standin/debian:bookworm
FROM ${BASE}
# Packages must not try to start their services while the image builds.
RUN printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d \
    && apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends rabbitmq-server >/dev/null \
    && rm -rf /var/lib/apt/lists/* /var/lib/rabbitmq/mnesia
ENV HOME=/var/lib/rabbitmq PATH=/usr/lib/rabbitmq/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
USER rabbitmq
EXPOSE 5672
CMD ["rabbitmq-server"]
