package dev.relay.examples.springshop;

import org.springframework.data.jpa.repository.JpaRepository;

/** Orders by number. */
public interface Orders extends JpaRepository<ShopOrder, Long> {}
