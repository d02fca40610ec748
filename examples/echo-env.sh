#!/bin/sh
# An exec handler for the example cluster: prints the invocation it was given.  The
# daemon passes the invocation in CAESIUM_* environment variables and the payload on
# stdin; exit status 0 means success.  Its output appears in the node's log line for
# the completed occurrence.
payload=$(cat)
echo "$GREETING: $CAESIUM_VOLUME/$CAESIUM_ENTITY/$CAESIUM_ENTRY scheduled $CAESIUM_SCHEDULED" \
     "attempt $CAESIUM_ATTEMPT fire $CAESIUM_FIRE_ID duplicate=$CAESIUM_POSSIBLE_DUPLICATE" \
     "on $CAESIUM_NODE payload=$payload"
