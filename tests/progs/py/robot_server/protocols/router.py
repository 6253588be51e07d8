# SPDX-License-Identifier: MIT
"""Shaped like the robot server's router: the cached analysis is an inner
coroutine defined at every call, and returns without suspending."""


async def create_protocol(cache, key):
    async def _get_cached_protocol_analysis():
        return cache.get(key)

    return await _get_cached_protocol_analysis()
