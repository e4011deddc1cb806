# Stand-in for the top-level Dockerfile, used only where the official Swift image cannot be pulled
# (scripts/compose-test): its runtime stage, on a local Debian base, holding a `badgepipe` built on the host
# (release, Swift runtime linked statically) instead of one built in the Swift image. The build context is a
# directory holding that binary and `runtime/`: empty for such a binary; for one linked with the toolchain's Swift
# runtime libraries (a debug build, as CI's), those libraries, which go where the dynamic linker looks.
ARG BASE=badgepipe-standin/debian:bookworm
FROM ${BASE}
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends librabbitmq4 ca-certificates \
        >/dev/null \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --home-dir /var/lib/badgepipe --create-home badgepipe
COPY runtime/ /usr/local/lib/
RUN ldconfig
COPY badgepipe /usr/local/bin/badgepipe
USER badgepipe
WORKDIR /var/lib/badgepipe
ENTRYPOINT ["badgepipe"]
CMD ["--help"]
