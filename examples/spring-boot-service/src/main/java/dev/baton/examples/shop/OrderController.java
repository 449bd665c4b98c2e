package dev.baton.examples.shop;

import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** {@code POST /orders?id=o-1&email=ada@example.com}: places an order (and its receipt job) in one transaction. */
@RestController
public class OrderController {
    private final Orders orders;

    public OrderController(Orders orders) {
        this.orders = orders;
    }

    @PostMapping("/orders")
    public ResponseEntity<String> place(@RequestParam("id") String id, @RequestParam("email") String email) {
        try {
            orders.place(id, email);
            return ResponseEntity.accepted().body("order " + id + " placed; its receipt job commits with it\n");
        } catch (IllegalArgumentException e) {
            return ResponseEntity.badRequest()
                    .body("order " + id + " refused, nothing written: " + e.getMessage() + "\n");
        }
    }
}
