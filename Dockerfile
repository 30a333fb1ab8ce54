# Multi-stage build: a static switchboard binary on a minimal non-root image.
# Built the same way CI builds it (CGO_ENABLED=0 go build -trimpath ./cmd/switchboard).
#
# Layout of the image (cmd/switchboard/docker_test.go rebuilds it without
# Docker and runs the CLI against it as uid 65532):
#   /usr/local/bin/switchboard          the binary
#   /usr/share/switchboard/config.yaml  the image's default config: the shipped
#                                       config.yaml with the container's paths (set
#                                       below with `switchboard config set`);
#                                       read-only, never used in place
#   /data                               the volume, owned by the runtime user (65532):
#     config.yaml                       THE config (SWITCHBOARD_CONFIG): written from
#                                       the default on first start, never overwritten;
#                                       edit it with `switchboard config set` or the
#                                       console's Config page
#     switchboard.db                    sessions, jobs, pairing, audit
#     personas/                         persona files, written on first start; edit them
#                                       here (the built-ins assistant, reporter and buddy
#                                       always exist; a file of the same name overrides one)
#     skills/                           one folder per skill holding a SKILL.md
#     admin.token                       the daemon's token for local CLI commands (0600)
# So `docker exec <container> switchboard pairing list` (and every other
# command) works with no flags.
#
# Base images. The runtime image is pinned by digest (distroless
# static-debian12:nonroot as published in 2026-08; no registry could be
# reached where this file was written, so the digest was taken from its
# published references, not pulled here). The build image is pinned to the
# exact Go release go.mod names (golang images run with GOTOOLCHAIN=local,
# so an older 1.26.x would refuse the module); its digest is not pinned yet:
# append the one `docker buildx imagetools inspect golang:1.26.8-bookworm`
# prints (.ci/run prints the digests it built with). Renovate or Dependabot
# keep both fresh.
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /out/switchboard ./cmd/switchboard
RUN cp config.yaml /out/config.yaml \
 && /out/switchboard -c /out/config.yaml config set bot.data_dir /data \
 && /out/switchboard -c /out/config.yaml config set personas.dir /data/personas \
 && /out/switchboard -c /out/config.yaml config set skills.dir /data/skills \
 && /out/switchboard -c /out/config.yaml config set server.listen 0.0.0.0:8787 \
 && /out/switchboard -c /out/config.yaml config validate \
 && chmod 0644 /out/config.yaml \
 && mkdir -p /out/data/personas /out/data/skills

FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab
COPY --from=build /out/switchboard /usr/local/bin/switchboard
COPY --from=build /out/config.yaml /usr/share/switchboard/config.yaml
# /data/personas and /data/skills exist in the image so that a named volume
# mounted there (deploy/compose.replicas.yaml) starts out as the runtime
# user's, not root's.
COPY --from=build --chown=65532:65532 /out/data /data
ENV SWITCHBOARD_CONFIG=/data/config.yaml
ENV SWITCHBOARD_CONFIG_SEED=/usr/share/switchboard/config.yaml
VOLUME ["/data"]
WORKDIR /data
USER 65532:65532
EXPOSE 8787
# /healthz through the binary itself (the image has no shell, curl or wget).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["/usr/local/bin/switchboard", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/switchboard"]
CMD ["run"]
