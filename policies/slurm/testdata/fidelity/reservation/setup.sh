# Advanced reservation of n[2-3] for user daemon (no job of the fixture runs
# as daemon) from T0+60 s for 2 minutes.
start=$(date -u -d "@$((T0 + 60))" +%Y-%m-%dT%H:%M:%S)
scontrol create reservation ReservationName=maint Users=daemon Nodes=n[2-3] StartTime="$start" Duration=2
scontrol show reservation >&2
