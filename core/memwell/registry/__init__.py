"""Which plugins are installed and what each registers: entry-point discovery, the resolved
registries, the cache kept between processes, hook-call tracing.
"""
