set(layers "low;high")
set(uses_low "")
set(uses_high "low")
set(interface_low "low.h")
