# The Redis and PostgreSQL of `make compose-test`, where no image registry
# can be reached: a Debian root made with debootstrap (imported as BASE),
# with an entrypoint that does what compose.yaml asks of the official
# postgres image (a data directory, the POSTGRES_USER role and
# POSTGRES_DB database) and runs any other command as it is (redis-server).
ARG BASE=taskflow-test/debian-rootfs
FROM ${BASE}
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PGDATA=/var/lib/postgresql/data
COPY test-entrypoint.sh /usr/local/bin/test-entrypoint.sh
RUN chmod 0755 /usr/local/bin/test-entrypoint.sh && mkdir -p /data
ENTRYPOINT ["/usr/local/bin/test-entrypoint.sh"]
