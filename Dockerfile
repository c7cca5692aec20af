# The wonopcode image: a release build on the pinned toolchain, then only the binary on a
# slim Debian with git (batch tasks clone repositories) and CA certificates, as a non-root
# user. Build: docker build -t wonopcode . (deploy/kubernetes/README.md).

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
# rust-toolchain.toml pins the toolchain; the guests (built by crates/wasm-host/build.rs)
# need the wasm32-wasip2 target.
COPY rust-toolchain.toml ./
RUN rustup show active-toolchain && rustup target add wasm32-wasip2
COPY . .
RUN cargo build --release --locked --package wonopcode --bin wonopcode \
    && cp target/release/wonopcode /usr/local/bin/wonopcode

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install --yes --no-install-recommends ca-certificates git \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 wonopcode \
    && useradd --uid 10001 --gid 10001 --create-home --home-dir /home/wonopcode wonopcode
COPY --from=build /usr/local/bin/wonopcode /usr/local/bin/wonopcode
USER 10001:10001
WORKDIR /home/wonopcode
ENTRYPOINT ["wonopcode"]
CMD ["--help"]
