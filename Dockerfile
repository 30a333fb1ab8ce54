# Multi-stage build: a static switchboard binary on a minimal non-root image.
# Built the same way CI builds it (CGO_ENABLED=0 go build -trimpath ./cmd/switchboard).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /out/switchboard ./cmd/switchboard

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/switchboard /usr/local/bin/switchboard
COPY config.yaml /etc/switchboard/config.yaml
# personas.dir (./personas) resolves next to the config file; mount a volume
# over /etc/switchboard/personas to edit them.
COPY personas/*.md /etc/switchboard/personas/
# Sessions (switchboard.db) and the editable personas/ directory live in /data.
VOLUME ["/data"]
WORKDIR /data
USER nonroot:nonroot
EXPOSE 8787
ENTRYPOINT ["/usr/local/bin/switchboard"]
CMD ["run", "--config", "/etc/switchboard/config.yaml", "--data-dir", "/data", "--listen", "0.0.0.0:8787"]
