import sparkway as pw


class InputSchema(pw.Schema):
    user_id: str
    access_time: int


if __name__ == "__main__":
    table = pw.io.csv.read(
        "logs/",
        mode="static",
        schema=InputSchema,
        persistent_id="logs",  # Change: persistent ID assigned
    )
    sessions = table.windowby(
        pw.this.access_time,
        window=pw.temporal.session(max_gap=300),
        shard=pw.this.user_id,
    ).reduce(
        user_id=table.user_id,
        session_length=(
            pw.reducers.max(table.access_time) - pw.reducers.min(table.access_time)
        ),
        session_start=pw.reducers.min(table.access_time),
        session_finish=pw.reducers.max(table.access_time),
        count=pw.reducers.count(),
    )
    pw.io.csv.write(sessions, "sessions.csv")

    # Change: persistence config created
    persistence_backend = pw.persistence.Backend.filesystem("./PStorage")
    persistence_config = pw.persistence.Config(persistence_backend)
    pw.run(
        monitoring_level=pw.MonitoringLevel.NONE,

        # Change: persistence config passed to the method
        persistence_config=persistence_config,
    )
