#!/usr/bin/env bash
# Make sure a RabbitMQ broker answers on 127.0.0.1:5672 (the test suite's broker).
#
# - Something already answers there: exit 0, touch nothing.
# - Otherwise install the distribution's rabbitmq-server if it is missing (apt-get, as root or
#   through sudo) and start it detached, bound to loopback only (AMQP, epmd and the Erlang
#   distribution port). The default guest/guest user works on loopback. It is left running.
#
# Env: RABBITMQ_START_TIMEOUT (seconds, default 60).
set -euo pipefail

HOST=127.0.0.1
PORT=5672
TIMEOUT="${RABBITMQ_START_TIMEOUT:-60}"
LOG_DIR=/var/log/rabbitmq

say() { printf 'ensure-rabbitmq: %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

answers() { timeout 2 bash -c "exec 3<>/dev/tcp/${HOST}/${PORT}" 2>/dev/null; }

if answers; then
    say "RabbitMQ answers on ${HOST}:${PORT}"
    exit 0
fi

# Root runs everything directly; anyone else goes through sudo (the package's wrapper only lets
# root or the rabbitmq user start the server).
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 ||
        die "nothing answers on ${HOST}:${PORT} and installing/starting RabbitMQ needs root, but sudo is missing. Fix: run this script as root, or start a broker on ${HOST}:${PORT}."
    SUDO="sudo"
fi

find_server() { command -v rabbitmq-server 2>/dev/null || { [ -x /usr/sbin/rabbitmq-server ] && echo /usr/sbin/rabbitmq-server; }; }

if ! SERVER="$(find_server)"; then
    command -v apt-get >/dev/null 2>&1 ||
        die "rabbitmq-server is not installed and apt-get is not available. Fix: install RabbitMQ and start it on ${HOST}:${PORT}."
    # Written before the install so that a service the package starts itself (systemd hosts)
    # listens on loopback only, as the node started below does.
    if [ ! -e /etc/rabbitmq/rabbitmq-env.conf ]; then
        say "writing /etc/rabbitmq/rabbitmq-env.conf (loopback only)"
        $SUDO mkdir -p /etc/rabbitmq
        printf '%s\n' \
            'NODENAME=rabbit@localhost' \
            'NODE_IP_ADDRESS=127.0.0.1' \
            'export ERL_EPMD_ADDRESS=127.0.0.1' \
            'SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"' |
            $SUDO tee /etc/rabbitmq/rabbitmq-env.conf >/dev/null
    fi
    say "installing rabbitmq-server with apt-get"
    $SUDO apt-get update
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y rabbitmq-server
    SERVER="$(find_server)" || die "rabbitmq-server is still not found after apt-get install."
    if answers; then
        say "RabbitMQ (started by the package) answers on ${HOST}:${PORT}"
        exit 0
    fi
fi

say "starting ${SERVER} -detached on ${HOST}:${PORT}"
# sudo resets the environment, so the settings go through env(1).
$SUDO env \
    RABBITMQ_NODENAME=rabbit@localhost \
    RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
    RABBITMQ_NODE_PORT="${PORT}" \
    ERL_EPMD_ADDRESS=127.0.0.1 \
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
    "${SERVER}" -detached || say "'${SERVER} -detached' exited with $? (a node may already be running); waiting for the port"

deadline=$((SECONDS + TIMEOUT))
until answers; do
    if [ "${SECONDS}" -ge "${deadline}" ]; then
        say "RabbitMQ did not answer on ${HOST}:${PORT} within ${TIMEOUT}s. Last log lines:"
        for log in "${LOG_DIR}/rabbit@localhost.log" "${LOG_DIR}/startup_log" "${LOG_DIR}/startup_err"; do
            if $SUDO test -r "${log}"; then
                echo "--- ${log}" >&2
                $SUDO tail -n 30 "${log}" >&2 || true
            fi
        done
        die "fix the error above (another node holding rabbit@localhost? port ${PORT} taken?), or start a broker on ${HOST}:${PORT} yourself."
    fi
    sleep 1
done
say "RabbitMQ answers on ${HOST}:${PORT}"
