# BadgePipe image: one image for every command (`worker`, `sink`, `publish`, `setup`); `badgepipe` is the
# entrypoint, so `docker run IMAGE worker` runs a worker.
#
#   docker build -t badgepipe .
#
# Stage 1 builds `badgepipe` in release mode in the official Swift image, with the Swift runtime (and Foundation)
# linked statically; stage 2 is a slim Debian holding only the binary, librabbitmq4 and CA certificates, running
# as an unprivileged user. (scripts/compose-test, on machines that cannot pull images, builds the same runtime
# stage from deploy/standins/badgepipe.Dockerfile around a binary built on the host.)

FROM swift:6.3-bookworm AS build
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends librabbitmq-dev pkg-config \
        >/dev/null \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Dependencies first, so that a source change does not fetch them again.
COPY Package.swift ./
RUN swift package resolve
COPY Sources ./Sources
COPY Tests ./Tests
RUN swift build -c release --static-swift-stdlib --product badgepipe \
    && install -m 0755 "$(swift build -c release --show-bin-path)/badgepipe" /usr/local/bin/badgepipe

FROM debian:bookworm-slim
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends librabbitmq4 ca-certificates \
        >/dev/null \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --home-dir /var/lib/badgepipe --create-home badgepipe
COPY --from=build /usr/local/bin/badgepipe /usr/local/bin/badgepipe
USER badgepipe
WORKDIR /var/lib/badgepipe
ENTRYPOINT ["badgepipe"]
CMD ["--help"]
